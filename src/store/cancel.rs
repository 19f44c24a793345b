//! The owner's cancel: a waiting task is cancelled at once, a running one
//! is marked cancelling for its worker to hear at the next heartbeat.

use crate::store::Statements;
use tokio_postgres::GenericClient;
use uuid::Uuid;

use super::query;

use super::DbError;
use crate::task::owner::Owner;
use crate::task::record::TaskRecord;

/// The owner's cancel: returns the task after it, or `None` if `owner` cannot see it.
/// A waiting task is cancelled at once, a running one is marked cancelling, a terminal
/// or already cancelling one is returned unchanged.
pub async fn cancel<C: GenericClient + Sync>(
    client: &C,
    owner: &Owner,
    id: Uuid,
) -> Result<Option<TaskRecord>, DbError> {
    client
        .row_opt(
            include_str!("../../sql/cancel.sql"),
            &[&id, &owner.app, &owner.scope_id],
        )
        .await?;
    query::get(client, owner, id).await
}
