//! The pruning statement: released, finished, terminal tasks past the
//! retention are deleted with their events, in bounded batches that any number of
//! replicas run at once (SKIP LOCKED). Once a task is pruned its effect key no longer
//! blocks a new task.

use crate::store::Statements;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio_postgres::GenericClient;

use super::DbError;

/// What a pruning pass did: how many rows it deleted, and the greatest key it deleted
/// in the order it reads them (a task's `released_at`, a notification's id): where the
/// next pass may start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pruned<T> {
    pub count: u64,
    pub reached: Option<T>,
}

/// Deletes at most `limit` terminal tasks whose `released_at` and `finished_at` are both
/// older than `now - retention`, and whose `released_at` is at or after `from` when
/// given. `now` is the database clock unless a test moves it.
pub async fn prune_tasks<C: GenericClient + Sync>(
    client: &C,
    retention: Duration,
    limit: i64,
    now: Option<DateTime<Utc>>,
    from: Option<DateTime<Utc>>,
) -> Result<Pruned<DateTime<Utc>>, DbError> {
    let row = client
        .row(
            include_str!("../../sql/prune_tasks.sql"),
            &[&retention.as_secs_f64(), &limit, &now, &from],
        )
        .await?;
    Ok(Pruned {
        count: row.try_get::<_, i64>("pruned")? as u64,
        reached: row.try_get("reached")?,
    })
}
