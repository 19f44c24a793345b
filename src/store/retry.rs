//! The owner's retry of a failed or cancelled task.

use crate::store::Statements;
use tokio_postgres::GenericClient;
use uuid::Uuid;

use super::query;

use super::DbError;
use crate::task::owner::Owner;
use crate::task::record::TaskRecord;

/// How a retry was answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Retried {
    /// Queued again; the task after the move.
    Queued(TaskRecord),
    /// The task is not failed or cancelled; as it is.
    NotRetryable(TaskRecord),
    /// `owner` cannot see such a task.
    NotFound,
}

/// Queues a failed or cancelled task again with a fresh attempt budget, in the caller's
/// transaction (which must be one: the owner lock is held until it ends, so a retry
/// serializes with the scope's deletion like a submit does). `admit` runs under the
/// owner lock before the move: fences and admission limits refuse there.
pub async fn retry<C, E, F, Fut>(tx: &C, owner: &Owner, id: Uuid, admit: F) -> Result<Retried, E>
where
    C: GenericClient + Sync,
    E: From<DbError>,
    F: FnOnce(TaskRecord) -> Fut,
    Fut: std::future::Future<Output = Result<(), E>>,
{
    let Some(task) = query::get(tx, owner, id).await? else {
        return Ok(Retried::NotFound);
    };
    if !matches!(
        task.state,
        crate::task::TaskState::Failed | crate::task::TaskState::Cancelled
    ) {
        return Ok(Retried::NotRetryable(task));
    }
    tx.run(
        include_str!("../../sql/owner_lock_scope.sql"),
        &[&task.app, &task.scope_id],
    )
    .await?;
    admit(task.clone()).await?;
    let moved = tx
        .row_opt(
            include_str!("../../sql/task_retry.sql"),
            &[&id, &owner.app, &owner.scope_id],
        )
        .await?;
    let after = query::get(tx, owner, id).await?;
    Ok(match (moved, after) {
        (Some(_), Some(task)) => Retried::Queued(task),
        (None, Some(task)) => Retried::NotRetryable(task),
        (_, None) => Retried::NotFound,
    })
}
