//! Wake-up notifications: the `NOTIFY` that tells other replicas' idle claim loops that
//! work may be claimable (they LISTEN on [`super::WAKEUP_CHANNEL`]). A lost one costs a
//! poll interval of latency, never a task.

use super::cached::Cached;
use crate::store::Statements;
use tokio_postgres::GenericClient;

use super::{DbError, WAKEUP_CHANNEL};

/// Notifies the other replicas, at once on a plain client, or at commit inside a
/// transaction. Prepared once per connection where the client caches statements: the
/// notifier sends one per burst of submits, and pickup latency waits on it.
pub async fn wake_replicas<C: GenericClient + Sync>(client: &C) -> Result<(), DbError> {
    client
        .run(
            include_str!("../../sql/notify_wakeup.sql"),
            &[&WAKEUP_CHANNEL],
        )
        .await?;
    Ok(())
}

/// [`wake_replicas`] on a pooled connection, the statement prepared once per connection
/// (where that is safe: see [`super::cached`]).
pub async fn wake_replicas_pooled(client: &crate::store::Pooled) -> Result<(), DbError> {
    client
        .cached_rows(
            include_str!("../../sql/notify_wakeup.sql"),
            &[&WAKEUP_CHANNEL],
        )
        .await?;
    Ok(())
}
