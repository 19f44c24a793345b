//! The one error of the application service: every operation's refusal, each with the
//! stable code that callers (the HTTP layer, the CLI, the load generator) report.

use crate::admission::{AdminError, Refusal};
use crate::store::{DbError, LeaseError, SubmitError};
use crate::task::bounds::Invalid;
use crate::task::state::IllegalTransition;

/// Why an operation was refused or could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The caller cannot see such a task (another owner's task is not found, too).
    #[error("no such task")]
    NotFound,
    /// A scope token acting on another scope of its app.
    #[error("the token may act on its own scope only")]
    OtherScope,
    #[error("unknown task type {0:?}")]
    UnknownTaskType(String),
    /// No circuit has this route name (a route that never failed has none: it is
    /// closed).
    #[error("no circuit named {0:?} (a route without failures has no circuit to reset)")]
    UnknownCircuit(String),
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// The identity exists with another request digest.
    #[error("the effect key is already used by a different request")]
    IdempotencyConflict,
    /// The conflicting row vanished before it could be read; submitting again works.
    #[error("a concurrent change to this identity interfered; submit again")]
    Raced,
    /// The scope was deleted with a fence.
    #[error("the scope was deleted and is fenced")]
    ScopeDeleted,
    /// Admission refused it (capacity, rate, budget, emergency stop); nothing was written.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// Only failed or cancelled tasks can be retried.
    #[error("only failed or cancelled tasks can be retried")]
    NotRetryable,
    /// Another claim or a settlement moved the task on: the worker must stop.
    #[error("the lease was lost")]
    LeaseLost,
    /// The task was deleted: the worker must stop.
    #[error("the task is gone")]
    TaskGone,
    /// A remote worker's result that is not the structured output the task type's
    /// output schema asks for; nothing was written.
    #[error("{0}")]
    InvalidOutput(String),
    /// A worker's report that the task's state does not allow.
    #[error(transparent)]
    Illegal(#[from] IllegalTransition),
    /// The app has no webhook endpoint of that name.
    #[error("no such webhook endpoint")]
    WebhookNotFound,
    /// The endpoint has no such notification.
    #[error("no such delivery")]
    DeliveryNotFound,
    /// The endpoint was disabled by a 410; PUT it again to enable it.
    #[error("the endpoint is disabled (its receiver answered 410); PUT it again first")]
    EndpointDisabled,
    /// No connection could be had from the pool: every one was busy for too long.
    #[error("database pool: {0}")]
    Pool(String),
    /// No connection could be made: the server did not answer or refused (the message
    /// names the host and the setting to look at).
    #[error("database unreachable: {0}")]
    Unreachable(String),
    #[error("database: {0}")]
    Db(#[from] DbError),
}

impl ServiceError {
    /// Whether the caller was refused (the request was understood and said no to), as
    /// opposed to the service failing to answer.
    pub fn is_refusal(&self) -> bool {
        !matches!(
            self,
            ServiceError::Pool(_) | ServiceError::Unreachable(_) | ServiceError::Db(_)
        )
    }

    /// Whether the database could not be had (no connection, none free, or a failure
    /// that means the connection or its server was lost: see `store::connect::lost`),
    /// as opposed to a statement that failed.
    pub fn is_unavailable(&self) -> bool {
        match self {
            ServiceError::Pool(_) | ServiceError::Unreachable(_) => true,
            ServiceError::Db(error) => crate::store::connect::lost::lost(error).is_some(),
            _ => false,
        }
    }

    /// Whether an error a background loop got (anyhow, its causes in the chain) means
    /// the database could not be had, as [`ServiceError::is_unavailable`] says, or a
    /// connection could not be made for a reason that passes by itself
    /// (`store::connect::lost::passing`). Such failures are logged once per outage
    /// (`telemetry::outage`), not once per pass.
    pub fn unavailable(error: &anyhow::Error) -> bool {
        error.chain().any(|e| {
            e.downcast_ref::<ServiceError>()
                .is_some_and(ServiceError::is_unavailable)
                || e.downcast_ref::<tokio_postgres::Error>()
                    .is_some_and(|e| crate::store::connect::lost::lost(e).is_some())
        }) || crate::store::connect::lost::passing(error)
    }

    /// PostgreSQL's SQLSTATE of a database error, for logs: `Display` of a server error
    /// says only "db error", and its message may quote row values.
    pub fn sqlstate(&self) -> Option<&str> {
        match self {
            ServiceError::Db(error) => error.code().map(|code| code.code()),
            _ => None,
        }
    }

    /// The stable machine-readable code of this error.
    pub fn code(&self) -> &'static str {
        use ServiceError::*;
        match self {
            NotFound => "not_found",
            OtherScope => "forbidden",
            UnknownTaskType(_) => "unknown_task_type",
            UnknownCircuit(_) => "not_found",
            Invalid(_) => "validation_failed",
            IdempotencyConflict => "idempotency_conflict",
            Raced => "concurrent_change",
            ScopeDeleted => "scope_deleted",
            Refused(refusal) => refusal.code.as_str(),
            NotRetryable => "not_retryable",
            LeaseLost => "lease_lost",
            TaskGone => "task_gone",
            InvalidOutput(_) => "invalid_output",
            Illegal(_) => "illegal_transition",
            WebhookNotFound | DeliveryNotFound => "not_found",
            EndpointDisabled => "endpoint_disabled",
            Pool(_) => "pool_exhausted",
            Unreachable(_) => "database_unreachable",
            Db(_) => "database_error",
        }
    }
}

impl From<crate::store::connect::PoolError> for ServiceError {
    fn from(error: crate::store::connect::PoolError) -> Self {
        use deadpool::managed::PoolError;
        match error {
            // A refusal keeps PostgreSQL's SQLSTATE for the logs (too many connections).
            PoolError::Backend(error) => match error.0.downcast::<tokio_postgres::Error>() {
                Ok(refused) => ServiceError::Db(refused),
                Err(other) => ServiceError::Unreachable(format!("{other:#}")),
            },
            other => ServiceError::Pool(other.to_string()),
        }
    }
}

impl From<SubmitError> for ServiceError {
    fn from(error: SubmitError) -> Self {
        match error {
            SubmitError::IdempotencyConflict => ServiceError::IdempotencyConflict,
            SubmitError::Raced => ServiceError::Raced,
            SubmitError::ScopeDeleted => ServiceError::ScopeDeleted,
            SubmitError::Db(error) => ServiceError::Db(error),
        }
    }
}

impl From<LeaseError> for ServiceError {
    fn from(error: LeaseError) -> Self {
        match error {
            LeaseError::Lost => ServiceError::LeaseLost,
            LeaseError::Gone => ServiceError::TaskGone,
            LeaseError::Illegal(illegal) => ServiceError::Illegal(illegal),
            LeaseError::Db(error) => ServiceError::Db(error),
        }
    }
}

impl From<AdminError> for ServiceError {
    fn from(error: AdminError) -> Self {
        match error {
            AdminError::Invalid(invalid) => ServiceError::Invalid(invalid),
            AdminError::Db(error) => ServiceError::Db(error),
        }
    }
}
