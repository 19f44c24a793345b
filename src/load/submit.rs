//! Submitting through the application service, as a replica's HTTP handler does
//! (`Tasklane::submit`: validate, one prepared statement that is its own transaction,
//! then wake workers). The commit instant is recorded between the statement's return
//! and the wake-up, so pickup latency is measured from the moment the task became
//! visible, never before it.

use std::time::{Duration, Instant, SystemTime};

use uuid::Uuid;

use crate::service::{Owner, ServiceError, SubmitOutcome, Tasklane};
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
    let mut committed = None;
    let submitted = tasklane
        .submit_with(&Owner::app(app), request, None, || {
            committed = Some((SystemTime::now(), started.elapsed()));
        })
        .await
        .map_err(|e| code(&e))?;
    let (committed_at, latency) = committed.expect("an accepted submit was committed");
    Ok(Accepted {
        id: submitted.task.id,
        committed_at,
        latency,
        created: submitted.outcome == SubmitOutcome::Created,
    })
}

/// The stable error code the HTTP API would answer with.
pub fn code(error: &ServiceError) -> String {
    error.code().to_owned()
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
