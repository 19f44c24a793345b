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
}

/// Listens on `channel` until `shutdown`, reconnecting a second after any failure
/// (`what` names the listener in the warning).
pub async fn listen<L: Listener>(
    database_url: String,
    channel: &'static str,
    what: &'static str,
    mut listener: L,
    shutdown: CancellationToken,
) {
    loop {
        let result = tokio::select! {
            result = listen_once(&database_url, channel, &mut listener) => result,
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

async fn listen_once<L: Listener>(
    database_url: &str,
    channel: &str,
    listener: &mut L,
) -> anyhow::Result<()> {
    let (client, mut connection) = super::connect::Database::from_url(database_url)?
        .connect_with_driver()
        .await?;
    let (messages_tx, mut messages) = tokio::sync::mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        let mut stream = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = stream.next().await {
            if messages_tx.send(message).is_err() {
                break;
            }
        }
    });
    let result = async {
        client.batch_execute(&format!("LISTEN {channel}")).await?;
        listener.listening();
        while let Some(message) = messages.recv().await {
            if let tokio_postgres::AsyncMessage::Notification(n) = message? {
                listener.notified(n.payload());
            }
        }
        anyhow::bail!("the LISTEN connection closed")
    }
    .await;
    driver.abort();
    result
}
