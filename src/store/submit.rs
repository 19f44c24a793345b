//! Submit: create a task, or join/replay the one that already has its identity (app,
//! scope, effect key and usage subject), as one statement: `tasklane.submit_task`
//! (current definition in `sql/functions/submit_task.sql`) runs lookup, owner and
//! identity locks, fence, admission and insert in the database, so a submit costs one
//! round trip and holds its locks for no longer than that. On a plain connection the
//! statement is its own transaction (committed when it returns); inside the caller's
//! transaction it commits with it.

use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::GenericClient;

use super::admission::AdmitReport;
use super::DbError;
use crate::task::record::TaskRecord;
use crate::task::record::{SubmitOutcome, Submitted};
use crate::task::{NewTask, TaskId};

/// What the database decided for a well-formed submit.
#[derive(Debug, Clone)]
pub enum Submission {
    /// Boxed: a task record is large, and a refusal should not carry its size.
    Accepted(Box<Submitted>),
    /// Admission refused it and took nothing; the report says which limit and until when.
    Refused(AdmitReport),
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

/// Submits `task` as task `id` (used only if it is created). Works on a plain client or
/// inside the caller's transaction; the statement is sent with its parameter types
/// (`query_typed`), so it is one round trip without a prepared statement per connection.
pub async fn submit<C: GenericClient + Sync>(
    client: &C,
    id: TaskId,
    task: &NewTask,
) -> Result<Submission, SubmitError> {
    let params = Params::new(id, task);
    let row = client.query_typed_opt(SQL, &params.typed()).await?;
    decide(row)
}

/// [`submit`] on a pooled connection, the statement prepared once per connection
/// (deadpool's cache): the HTTP hot path, one round trip and no re-parse or re-plan.
/// Behind a pooler in transaction mode it runs unnamed, as [`submit`] does.
pub async fn submit_pooled(
    client: &crate::store::Pooled,
    id: TaskId,
    task: &NewTask,
) -> Result<Submission, SubmitError> {
    let params = Params::new(id, task);
    if crate::store::connect::unnamed_statements_only() {
        let row = client.query_typed_opt(SQL, &params.typed()).await?;
        return decide(row);
    }
    let statement = client.prepare_cached(SQL).await?;
    let typed = params.typed();
    let values: Vec<&(dyn ToSql + Sync)> = typed.iter().map(|(value, _)| *value).collect();
    let row = client.query_opt(&statement, &values).await?;
    decide(row)
}

const SQL: &str = include_str!("../../sql/submit.sql");

/// The statement's parameters, converted to their column types once.
struct Params<'a> {
    id: TaskId,
    task: &'a NewTask,
    digest: &'a [u8],
    priority: i16,
    on_restart: &'static str,
    privacy: &'static str,
    lease_seconds: i32,
    attempt_timeout_seconds: i32,
}

impl<'a> Params<'a> {
    fn new(id: TaskId, task: &'a NewTask) -> Self {
        Params {
            id,
            task,
            digest: task.digest.as_slice(),
            priority: task.priority as i16,
            on_restart: task.on_restart.as_str(),
            privacy: task.privacy.as_str(),
            lease_seconds: task.lease_seconds as i32,
            attempt_timeout_seconds: task.attempt_timeout_seconds as i32,
        }
    }

    /// In the order of `sql/submit.sql`'s `$1..$18`.
    fn typed(&self) -> [(&(dyn ToSql + Sync), Type); 18] {
        let task = self.task;
        [
            (&self.id, Type::UUID),
            (&task.app, Type::TEXT),
            (&task.scope_id, Type::TEXT),
            (&task.effect_key, Type::TEXT),
            (&task.usage_subject, Type::TEXT),
            (&task.source_id, Type::TEXT),
            (&task.task_type, Type::TEXT),
            (&self.digest, Type::BYTEA),
            (&task.input, Type::JSONB),
            (&self.priority, Type::INT2),
            (&task.max_attempts, Type::INT4),
            (&self.on_restart, Type::TEXT),
            (&self.privacy, Type::TEXT),
            (&self.lease_seconds, Type::INT4),
            (&self.attempt_timeout_seconds, Type::INT4),
            (&task.deadline_seconds, Type::INT8),
            (&task.resource, Type::TEXT),
            (&task.traceparent, Type::TEXT),
        ]
    }
}

/// Reads `tasklane.submit_task`'s answer.
pub(super) fn decide(row: Option<tokio_postgres::Row>) -> Result<Submission, SubmitError> {
    let Some(row) = row else {
        return Err(SubmitError::Raced);
    };
    // A batch answers a vanished identity with a row whose outcome is NULL.
    let Some(outcome): Option<String> = row.try_get("outcome")? else {
        return Err(SubmitError::Raced);
    };
    match outcome.as_str() {
        "created" | "found" => {
            let task = TaskRecord::from_row(&row)?;
            let outcome = if outcome == "created" {
                SubmitOutcome::Created
            } else if task.state.is_terminal() {
                SubmitOutcome::Existing
            } else {
                SubmitOutcome::Joined
            };
            Ok(Submission::Accepted(Box::new(Submitted { task, outcome })))
        }
        "conflict" => Err(SubmitError::IdempotencyConflict),
        "scope_deleted" => Err(SubmitError::ScopeDeleted),
        // 'refused': tasklane.submit_task returns no other outcome.
        _ => Ok(Submission::Refused(AdmitReport {
            refused: row.try_get("refused")?,
            limit_id: row.try_get("refused_limit")?,
            free_at: row.try_get("free_at")?,
            at: row.try_get("decided_at")?,
        })),
    }
}
