//! Submitting through the Rust API, as a replica's HTTP handler does: validate against
//! the registry, one prepared statement that is its own transaction
//! (`store::submit::submit_pooled`), then wake workers (this process's directly,
//! others' by debounced NOTIFY). The commit instant is recorded between the statement's
//! return and the wake-up, so pickup latency is measured from the moment the task
//! became visible, never before it.

use std::time::{Duration, Instant, SystemTime};

use uuid::Uuid;

use crate::client::{accepted, SubmitRefused, Tasklane};
use crate::store::submit::{self, SubmitOutcome};
use crate::task::SubmitRequest;

/// One submit that was accepted.
#[derive(Debug, Clone, Copy)]
pub struct Accepted {
    pub id: Uuid,
    /// Wall clock right after the commit returned (same clock as the database's on this
    /// machine).
    pub committed_at: SystemTime,
    /// From the call to the commit's return.
    pub latency: Duration,
    pub created: bool,
}

/// Submits `request` for `app` through `tasklane`; errors come back as a stable code.
pub async fn submit(
    tasklane: &Tasklane,
    app: &str,
    request: &SubmitRequest,
) -> Result<Accepted, String> {
    let started = Instant::now();
    let task = tasklane.prepare(app, request).map_err(|e| code(&e))?;
    let object = tasklane
        .pool
        .get()
        .await
        .map_err(|_| "pool_exhausted".to_owned())?;
    let submission = submit::submit_pooled(&object, crate::task::new_task_id(), &task)
        .await
        .map_err(|e| code(&e.into()))?;
    let submitted = accepted(submission).map_err(|refusal| code(&refusal.into()))?;
    let committed_at = SystemTime::now();
    let latency = started.elapsed();
    let created = submitted.outcome == SubmitOutcome::Created;
    if created {
        tasklane.wakeup.wake_all();
    }
    Ok(Accepted {
        id: submitted.task.id,
        committed_at,
        latency,
        created,
    })
}

/// The stable error code the HTTP API would answer with.
pub fn code(error: &SubmitRefused) -> String {
    use crate::store::submit::SubmitError;
    match error {
        SubmitRefused::UnknownTaskType(_) => "unknown_task_type",
        SubmitRefused::Invalid(_) => "validation_failed",
        SubmitRefused::Submit(SubmitError::IdempotencyConflict) => "idempotency_conflict",
        SubmitRefused::Submit(SubmitError::ScopeDeleted) => "scope_deleted",
        SubmitRefused::Submit(SubmitError::Raced) => "raced",
        SubmitRefused::Submit(SubmitError::Db(_)) => "database_error",
        SubmitRefused::Pool(_) => "pool_exhausted",
        SubmitRefused::Refused(refusal) => refusal.code.as_str(),
    }
    .to_owned()
}

/// A request for load: a fresh effect key per `n`, spread over 100 scopes.
pub fn request(run: &str, n: u64, task_type: &str, input: &serde_json::Value) -> SubmitRequest {
    SubmitRequest {
        task_type: task_type.to_owned(),
        scope_id: format!("load-{}", n % 100),
        effect_key: format!("{run}-{n}"),
        source_id: None,
        usage_subject: None,
        input: input.clone(),
        priority: None,
        deadline_seconds: None,
        max_attempts: None,
        on_restart: None,
        privacy: None,
    }
}
