//! A LISTEN held on a dedicated connection (a pooled one would drop it), for the
//! replica's work wake-ups and for the HTTP layer's task watch: one loop for both.

use std::time::Duration;

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

/// What a listener does with its channel.
pub trait Listener: Send {
    /// The LISTEN (re)took effect: whatever was notified while it was down must be
    /// re-read now.
    fn listening(&mut self);
    /// One notification's payload.
    fn notified(&mut self, payload: &str);
    /// One notification's payload, on `channel` (of a listener on several).
    fn notified_on(&mut self, channel: &str, payload: &str) {
        let _ = channel;
        self.notified(payload);
    }
}

/// Listens on `channel` until `shutdown`, reconnecting a second after any failure
/// (`what` names the listener in the warning).
pub async fn listen<L: Listener>(
    database_url: String,
    channel: &'static str,
    what: &'static str,
    listener: L,
    shutdown: CancellationToken,
) {
    listen_all(database_url, &[channel], what, listener, shutdown).await
}

/// Listens on every one of `channels` on one connection until `shutdown`: its
/// notifications arrive in commit order whatever their channel.
pub async fn listen_all<L: Listener>(
    database_url: String,
    channels: &[&'static str],
    what: &'static str,
    mut listener: L,
    shutdown: CancellationToken,
) {
    loop {
        let result = tokio::select! {
            result = listen_once(&database_url, channels, &mut listener) => result,
            _ = shutdown.cancelled() => return,
        };
        if let Err(error) = result {
            tracing::warn!(error = %format!("{error:#}"), listener = what, "LISTEN lost; polling covers until it is back");
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = shutdown.cancelled() => return,
        }
    }
}

/// How often an idle LISTEN connection asks the server for an answer. An idle
/// connection owes nothing, so one whose network path was cut without a reset (a NAT,
/// a proxy keeping the client's side open) would otherwise go on "listening" to
/// nothing; with a question outstanding, the answer watchdog closes it when no answer
/// comes within [`PING_ANSWER`], and `listen` reconnects.
const PING_EVERY: Duration = Duration::from_secs(5);
const PING_ANSWER: Duration = Duration::from_secs(5);

/// How many messages may wait between a connection's driver and its listener. The
/// listener only hands each one on, so a full channel means it is behind: the driver
/// then waits, and PostgreSQL keeps the rest in the socket's buffers.
const MESSAGES_IN_FLIGHT: usize = 64;

async fn listen_once<L: Listener>(
    database_url: &str,
    channels: &[&'static str],
    listener: &mut L,
) -> anyhow::Result<()> {
    let (client, mut connection) = super::connect::Database::from_url(database_url)?
        .connect_watched(Some(PING_ANSWER))
        .await?;
    let (messages_tx, mut messages) = tokio::sync::mpsc::channel(MESSAGES_IN_FLIGHT);
    // The driver hands on messages until the first error or the end of the stream, and
    // then stops: a broken connection is not guaranteed to end its stream. Over TLS,
    // once the server is gone, every later poll fails at once (rustls reports the
    // missing close_notify on each read), so a driver that forwarded errors until the
    // listener hung up spun without yielding and queued errors without bound.
    // Reconnecting is `listen`'s job alone.
    let driver = tokio::spawn(async move {
        let mut stream = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = stream.next().await {
            let failed = message.is_err();
            if messages_tx.send(message).await.is_err() || failed {
                break;
            }
        }
    });
    let result = async {
        // One statement per channel, the first channel last: the session's last
        // statement, what pg_stat_activity shows of it, names the connection's main
        // channel.
        let listens: Vec<String> = channels
            .iter()
            .rev()
            .map(|c| format!("LISTEN {c}"))
            .collect();
        // The answers to the LISTENs come behind the notifications already on their
        // way, which the driver hands on only as this loop takes them: the statements
        // run in a task of their own while the loop goes on draining. (Awaited here, a
        // burst of more than MESSAGES_IN_FLIGHT notifications before an answer stopped
        // the driver, so the answer was never read: the listener hung, silently.)
        let client = std::sync::Arc::new(client);
        let relisten = |client: std::sync::Arc<tokio_postgres::Client>| {
            let listens = listens.clone();
            tokio::spawn(async move {
                for listen in &listens {
                    client.batch_execute(listen).await?;
                }
                Ok::<_, tokio_postgres::Error>(())
            })
        };
        let mut answer = Some(relisten(client.clone()));
        let mut listening = false;
        let mut ping = tokio::time::interval(PING_EVERY);
        loop {
            tokio::select! {
                message = messages.recv() => match message {
                    Some(message) => {
                        if let tokio_postgres::AsyncMessage::Notification(n) = message? {
                            listener.notified_on(n.channel(), n.payload());
                        }
                    }
                    None => anyhow::bail!("the LISTEN connection closed"),
                },
                answered = async { answer.as_mut().expect("an answer awaited").await }, if answer.is_some() => {
                    answer = None;
                    answered??;
                    if !listening {
                        listening = true;
                        listener.listening();
                    }
                }
                // LISTEN again is a no-op that needs an answer, and keeps the
                // session's last statement (what pg_stat_activity shows) the LISTEN.
                _ = ping.tick(), if listening && answer.is_none() => {
                    answer = Some(relisten(client.clone()));
                }
            }
        }
    }
    .await;
    driver.abort();
    result
}
