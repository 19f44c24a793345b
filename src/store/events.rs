//! Reading a task's events (they are written by the transition statements themselves).

use crate::store::Statements;
use crate::task::event::Event;
use tokio_postgres::GenericClient;
use uuid::Uuid;

use super::DbError;

/// Up to `limit` events of `task_id` with seq above `after`, ascending. The caller has
/// already checked that the task belongs to whoever asks.
pub async fn after<C: GenericClient + Sync>(
    client: &C,
    task_id: Uuid,
    after: i32,
    limit: i64,
) -> Result<Vec<Event>, DbError> {
    let rows = client
        .rows(
            include_str!("../../sql/events_after.sql"),
            &[&task_id, &after, &limit],
        )
        .await?;
    rows.iter()
        .map(|row| {
            Ok(Event {
                seq: row.try_get("seq")?,
                kind: row.try_get("type")?,
                data: row.try_get("data")?,
                at: row.try_get("at")?,
            })
        })
        .collect()
}

/// The last event seq of each of `ids` that still exists: one query however many tasks
/// a replica's waiters watch.
pub async fn latest_seqs<C: GenericClient + Sync>(
    client: &C,
    ids: &[Uuid],
) -> Result<std::collections::HashMap<Uuid, i32>, DbError> {
    let rows = client
        .rows(include_str!("../../sql/task_event_seqs.sql"), &[&ids])
        .await?;
    rows.iter()
        .map(|row| Ok((row.try_get("id")?, row.try_get("event_seq")?)))
        .collect()
}
