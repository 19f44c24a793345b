//! How `?wait=` and event streams learn that a task changed, on whichever replica it
//! changed: one LISTEN connection per replica on [`EVENTS_CHANNEL`] (a trigger NOTIFYs
//! each task whose events were written), fanned out in-process to every waiter. Waiters
//! re-read the database when their task is named, after a reconnect, and on a slow poll
//! as the fallback for lost notifications or LISTEN being unavailable.

use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::store::EVENTS_CHANNEL;

/// How often a waiter re-reads even without a notification.
pub const FALLBACK_POLL: Duration = Duration::from_secs(2);

/// What the listener tells waiters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// This task has new events.
    Task(Uuid),
    /// Notifications may have been missed: everyone re-reads.
    Everything,
}

/// The fan-out of one replica's listener. Cloning shares it.
#[derive(Clone)]
pub struct TaskWatch {
    changes: broadcast::Sender<Change>,
}

impl Default for TaskWatch {
    fn default() -> Self {
        TaskWatch { changes: broadcast::channel(4096).0 }
    }
}

impl TaskWatch {
    /// A waiter's receiver; subscribe before reading the database, so nothing that
    /// happens after the read is missed.
    pub fn subscribe(&self) -> Waiter {
        Waiter { changes: self.changes.subscribe() }
    }

    /// Listens on a dedicated connection until `shutdown`, reconnecting after failures.
    pub async fn run(self, database_url: String, shutdown: CancellationToken) {
        loop {
            let result = tokio::select! {
                result = self.listen_once(&database_url) => result,
                _ = shutdown.cancelled() => return,
            };
            if let Err(error) = result {
                tracing::warn!(error = %format!("{error:#}"), "events LISTEN lost; waiters poll until it is back");
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = shutdown.cancelled() => return,
            }
        }
    }

    async fn listen_once(&self, database_url: &str) -> anyhow::Result<()> {
        let (client, mut connection) = tokio_postgres::connect(database_url, tokio_postgres::NoTls).await?;
        let (tx, mut messages) = tokio::sync::mpsc::unbounded_channel();
        let driver = tokio::spawn(async move {
            let mut stream = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
            while let Some(message) = stream.next().await {
                if tx.send(message).is_err() {
                    break;
                }
            }
        });
        client.batch_execute(&format!("LISTEN {EVENTS_CHANNEL}")).await?;
        // Anything that happened before the LISTEN took effect is re-read.
        let _ = self.changes.send(Change::Everything);
        while let Some(message) = messages.recv().await {
            match message {
                Ok(tokio_postgres::AsyncMessage::Notification(n)) => {
                    if let Ok(id) = Uuid::parse_str(n.payload()) {
                        let _ = self.changes.send(Change::Task(id));
                    }
                }
                Ok(_) => {}
                Err(error) => {
                    driver.abort();
                    return Err(error.into());
                }
            }
        }
        driver.abort();
        anyhow::bail!("the LISTEN connection closed")
    }
}

/// One waiter's view of the changes.
pub struct Waiter {
    changes: broadcast::Receiver<Change>,
}

impl Waiter {
    /// Returns when `task` may have changed: it was named, notifications were possibly
    /// missed (lag, reconnect), or the fallback poll came due.
    pub async fn changed(&mut self, task: Uuid) {
        let poll = tokio::time::sleep(FALLBACK_POLL);
        tokio::pin!(poll);
        loop {
            tokio::select! {
                _ = &mut poll => return,
                change = self.changes.recv() => match change {
                    Ok(Change::Task(id)) if id != task => continue,
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => return,
                    // The listener is gone (shutdown): fall back to the poll.
                    Err(broadcast::error::RecvError::Closed) => {
                        (&mut poll).await;
                        return;
                    }
                },
            }
        }
    }
}
