//! Submit: create a task, or join/replay the one that already has its identity
//! (DESIGN §3). Runs inside the caller's transaction; the caller commits and only then
//! acknowledges.

use tokio_postgres::GenericClient;

use super::record::TaskRecord;
use super::DbError;
use crate::task::{NewTask, TaskId};

/// How a submit was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubmitOutcome {
    /// A new task was created (and queued).
    Created,
    /// The identity already had this request in flight: the caller observes it.
    Joined,
    /// The identity already finished (any terminal state): returned as it is, no
    /// admission, no charge.
    Existing,
}

#[derive(Debug, Clone)]
pub struct Submitted {
    pub task: TaskRecord,
    pub outcome: SubmitOutcome,
}

#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    /// The identity exists with another request digest.
    #[error("the effect key is already used by a different request")]
    IdempotencyConflict,
    /// The conflicting row vanished before it could be read (pruned or deleted in
    /// between); the caller may simply submit again.
    #[error("a concurrent change to this identity interfered; submit again")]
    Raced,
    /// The scope's owner was deleted with a fence (410 `scope_deleted`); see
    /// `store::lifecycle`.
    #[error("the scope was deleted and is fenced")]
    ScopeDeleted,
    #[error(transparent)]
    Db(#[from] DbError),
}

/// Submits `task` inside the caller's transaction. `admit` runs after the owner lock is
/// taken and before the insert, only when a new task is about to be created, with the
/// id the task will get: it is where fences and admission limits refuse (their error
/// converts into the caller's `E`) and where reservations are taken for that id. If a
/// concurrent duplicate wins the insert, those reservations are given back
/// (`tasklane.unadmit`): a join consumes nothing.
pub async fn submit<C, E, F, Fut>(tx: &C, task: &NewTask, admit: F) -> Result<Submitted, E>
where
    C: GenericClient + Sync,
    E: From<SubmitError>,
    F: FnOnce(TaskId) -> Fut,
    Fut: std::future::Future<Output = Result<(), E>>,
{
    if let Some(existing) = lookup(tx, task).await.map_err(SubmitError::from)? {
        return existing.map_err(E::from);
    }
    if let Some(existing) = lock(tx, task).await.map_err(SubmitError::from)? {
        return existing.map_err(E::from);
    }
    let id = crate::task::new_task_id();
    admit(id).await?;
    let row = tx
        .query_opt(
            include_str!("../../sql/submit_insert.sql"),
            &[
                &id,
                &task.app,
                &task.scope_id,
                &task.effect_key,
                &task.usage_subject,
                &task.source_id,
                &task.task_type,
                &task.digest.as_slice(),
                &task.input,
                &(task.priority as i16),
                &task.max_attempts,
                &task.on_restart.as_str(),
                &task.privacy.as_str(),
                &(task.lease_seconds as i32),
                &(task.attempt_timeout_seconds as i32),
                &task.deadline_seconds,
                &task.resource,
            ],
        )
        .await
        .map_err(SubmitError::from)?;
    match row {
        Some(row) => Ok(Submitted {
            task: TaskRecord::from_row(&row).map_err(SubmitError::from)?,
            outcome: SubmitOutcome::Created,
        }),
        // A concurrent submit of the same identity committed first: join it, giving back
        // what admission took for the id that was not used.
        None => {
            super::admission::unadmit(tx, id, &task.app, task.usage_subject.as_deref())
                .await
                .map_err(SubmitError::from)?;
            match lookup(tx, task).await.map_err(SubmitError::from)? {
                Some(existing) => existing.map_err(E::from),
                None => Err(E::from(SubmitError::Raced)),
            }
        }
    }
}

/// Takes the owner lock (shared) and try-locks the identity. If a concurrent submit of
/// the identity is in flight, waits for it to end and returns what it created, so the
/// caller joins it rather than taking (or being refused) reservations of its own.
async fn lock<C: GenericClient + Sync>(
    tx: &C,
    task: &NewTask,
) -> Result<Option<Result<Submitted, SubmitError>>, DbError> {
    let identity: [&(dyn tokio_postgres::types::ToSql + Sync); 4] = [
        &task.app,
        &task.scope_id,
        &task.effect_key,
        &task.usage_subject,
    ];
    let locks = tx
        .query_one(include_str!("../../sql/owner_lock_shared.sql"), &identity)
        .await?;
    if locks.try_get::<_, bool>("identity_free")? {
        return Ok(None);
    }
    tx.execute(include_str!("../../sql/identity_lock.sql"), &identity)
        .await?;
    lookup(tx, task).await
}

/// The task already holding `task`'s identity, judged against its digest.
async fn lookup<C: GenericClient + Sync>(
    tx: &C,
    task: &NewTask,
) -> Result<Option<Result<Submitted, SubmitError>>, DbError> {
    let row = tx
        .query_opt(
            include_str!("../../sql/submit_lookup.sql"),
            &[
                &task.app,
                &task.scope_id,
                &task.effect_key,
                &task.usage_subject,
            ],
        )
        .await?;
    let Some(row) = row else { return Ok(None) };
    let digest: Vec<u8> = row.try_get("request_digest")?;
    if digest != task.digest {
        return Ok(Some(Err(SubmitError::IdempotencyConflict)));
    }
    let record = TaskRecord::from_row(&row)?;
    let outcome = if record.state.is_terminal() {
        SubmitOutcome::Existing
    } else {
        SubmitOutcome::Joined
    };
    Ok(Some(Ok(Submitted {
        task: record,
        outcome,
    })))
}
