//! The worker protocol for remote workers in any language: claim (long-polling), then
//! heartbeat and one settlement, every write fenced on the lease token (409
//! `lease_lost`, 410 `task_gone`). A worker's token sees only its app's tasks: another
//! owner's task is a 404 here too.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::Json;
use uuid::Uuid;

use crate::http::auth::{perm, Allowed, Caller};
use crate::http::error::{ApiError, Problem};
use crate::http::extract::{task_id, Body};
use crate::http::AppState;
use crate::service::{Beat, Claimant, ClaimedTask, Reported, Success};
use crate::task::bounds;
use crate::task::settlement::Report;
use crate::task::Locality;

use super::worker_dto::*;

/// The longest claim long-poll, in seconds.
pub const MAX_CLAIM_WAIT_SECONDS: u64 = 30;
/// How often an empty long-poll re-tries the claim when no wake-up arrives.
const CLAIM_POLL: Duration = Duration::from_millis(500);

/// Claim up to `max` tasks, waiting up to `wait_seconds` while there are none.
#[utoipa::path(post, path = "/v1/worker/claim", tag = "worker", operation_id = "claim_tasks", request_body = ClaimBody,
    security(("bearer" = [])),
    responses((status = 200, description = "the claimed tasks; empty when the long poll ended with nothing to claim", body = ClaimAnswer), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 422, body = Problem)))]
pub async fn claim_tasks(
    State(state): State<AppState>,
    caller: Allowed<perm::Work>,
    Body(body): Body<ClaimBody>,
) -> Result<Json<ClaimAnswer>, ApiError> {
    body.validate()?;
    let locality = if body.route == "external" {
        Locality::External
    } else {
        Locality::Local
    };
    let claimant = Claimant {
        worker_id: &body.worker_id,
        locality,
        replica_id: None,
    };
    let deadline = state.long_poll_deadline(Duration::from_secs(body.wait_seconds.unwrap_or(0)));
    let mut wakeups = state.tasklane.wakeup().subscribe();
    loop {
        wakeups.borrow_and_update();
        let claimed = state
            .tasklane
            .claim(&claimant, Some(&caller.owner), &body.task_types, body.max)
            .await?;
        if !claimed.is_empty() || tokio::time::Instant::now() >= deadline {
            return Ok(Json(ClaimAnswer {
                tasks: claimed.into_iter().map(ClaimedView::from).collect(),
            }));
        }
        tokio::select! {
            _ = wakeups.changed() => {}
            _ = tokio::time::sleep(CLAIM_POLL) => {}
            _ = tokio::time::sleep_until(deadline) => {}
            _ = state.stopping.cancelled() => return Ok(Json(ClaimAnswer { tasks: Vec::new() })),
        }
    }
}

impl ClaimBody {
    /// What only the wire format bounds; the service checks the rest (worker id, batch
    /// size, task types).
    fn validate(&self) -> Result<(), ApiError> {
        let wait = self.wait_seconds.unwrap_or(0);
        bounds::within("wait_seconds", wait, &(0..=MAX_CLAIM_WAIT_SECONDS))
            .map_err(ApiError::Validation)?;
        if !matches!(self.route.as_str(), "local" | "external") {
            return Err(ApiError::invalid("route", "must be local or external"));
        }
        Ok(())
    }
}

impl From<ClaimedTask> for ClaimedView {
    fn from(task: ClaimedTask) -> Self {
        ClaimedView {
            id: task.id,
            task_type: task.task_type,
            attempt: task.attempt,
            lease_token: task.lease_token,
            lease_expires_at: task.lease_expires_at,
            input: task.input,
            snapshot: task.snapshot,
            deadline_at: task.deadline_at,
            attempt_deadline_at: task.attempt_deadline_at,
            traceparent: task.traceparent,
        }
    }
}

/// Extend the lease; report progress, phase, a snapshot, events and live output.
#[utoipa::path(post, path = "/v1/worker/tasks/{id}/heartbeat", tag = "worker", operation_id = "heartbeat_task", params(("id" = Uuid, Path)),
    request_body = HeartbeatBody, security(("bearer" = [])),
    responses((status = 200, description = "the extended lease, and whether the owner asked to cancel", body = BeatView), (status = 404, body = Problem),
        (status = 409, description = "lease_lost", body = Problem), (status = 410, description = "task_gone", body = Problem),
        (status = 422, body = Problem)))]
pub async fn heartbeat(
    State(state): State<AppState>,
    caller: Allowed<perm::Work>,
    Path(id): Path<String>,
    Body(body): Body<HeartbeatBody>,
) -> Result<Json<BeatView>, ApiError> {
    let id = task_id(&id)?;
    let beat = body.validate()?;
    let answer = state
        .tasklane
        .heartbeat_with_output(
            &caller.owner,
            id,
            body.lease_token,
            &beat,
            body.output.as_deref(),
        )
        .await?;
    Ok(Json(BeatView {
        lease_expires_at: answer.lease_expires_at,
        cancel_requested: answer.cancel_requested,
    }))
}

impl HeartbeatBody {
    fn validate(&self) -> Result<Beat, ApiError> {
        let progress = self
            .progress
            .map(|p| bounds::within("progress", p, &bounds::PROGRESS).map(|_| p as i16))
            .transpose()
            .map_err(ApiError::Validation)?;
        if self
            .phase
            .as_deref()
            .is_some_and(|p| !matches!(p, "loading" | "running"))
        {
            return Err(ApiError::invalid("phase", "must be loading or running"));
        }
        if let Some(snapshot) = &self.snapshot {
            check_snapshot("snapshot", snapshot)?;
        }
        let events = self.events.as_deref().unwrap_or_default();
        if events.len() > bounds::EVENTS_PER_HEARTBEAT {
            return Err(ApiError::invalid(
                "events",
                format!("at most {} per heartbeat", bounds::EVENTS_PER_HEARTBEAT),
            ));
        }
        let mut checked = Vec::with_capacity(events.len());
        for (n, event) in events.iter().enumerate() {
            if !matches!(event.kind.as_str(), "task.output" | "task.progress") {
                return Err(ApiError::invalid(
                    format!("events[{n}].type"),
                    "must be task.output or task.progress",
                ));
            }
            let data = event.data.clone().unwrap_or_else(|| serde_json::json!({}));
            bounds::json(&format!("events[{n}].data"), &data).map_err(ApiError::Validation)?;
            if json_len(&data) > bounds::EVENT_DATA_BYTES {
                return Err(ApiError::invalid(
                    format!("events[{n}].data"),
                    "must be at most 64 KiB",
                ));
            }
            checked.push(serde_json::json!({"type": event.kind, "data": data}));
        }
        Ok(Beat {
            progress,
            phase: self.phase.clone(),
            snapshot: self.snapshot.clone(),
            events: checked,
        })
    }
}

/// A resume snapshot, checked: JSON within bounds, at most 1 MiB.
pub(super) fn check_snapshot(field: &str, snapshot: &serde_json::Value) -> Result<(), ApiError> {
    bounds::json(field, snapshot).map_err(ApiError::Validation)?;
    if json_len(snapshot) > bounds::SNAPSHOT_BYTES {
        return Err(ApiError::invalid(
            field,
            format!("must be at most {} bytes", bounds::SNAPSHOT_BYTES),
        ));
    }
    Ok(())
}

/// A reported result, checked: JSON within bounds, at most 4 MiB.
pub(super) fn check_result(field: &str, result: &serde_json::Value) -> Result<(), ApiError> {
    bounds::json(field, result).map_err(ApiError::Validation)?;
    if json_len(result) > bounds::RESULT_BYTES {
        return Err(ApiError::invalid(
            field,
            format!("must be at most {} bytes", bounds::RESULT_BYTES),
        ));
    }
    Ok(())
}

fn json_len(value: &serde_json::Value) -> usize {
    serde_json::to_vec(value)
        .map(|v| v.len())
        .unwrap_or(usize::MAX)
}

/// Settle the attempt as succeeded.
#[utoipa::path(post, path = "/v1/worker/tasks/{id}/complete", tag = "worker", operation_id = "complete_task", params(("id" = Uuid, Path)),
    request_body = CompleteBody, security(("bearer" = [])),
    responses((status = 200, description = "the task's state after the settlement", body = Settled), (status = 404, body = Problem),
        (status = 409, body = Problem), (status = 410, body = Problem),
        (status = 422, description = "`validation_failed` or `unknown_field` (`field` names it); `invalid_output`: the task type has an output schema and `result.output` does not match it (nothing changed)", body = Problem)))]
pub async fn complete(
    State(state): State<AppState>,
    caller: Allowed<perm::Work>,
    Path(id): Path<String>,
    Body(body): Body<CompleteBody>,
) -> Result<Json<Settled>, ApiError> {
    let id = task_id(&id)?;
    check_result("result", &body.result)?;
    let (facts, units) = facts(body.usage.as_ref(), body.provenance.as_ref())?;
    let success = Success {
        result: body.result,
        usage_units: units,
        facts,
    };
    state
        .tasklane
        .complete(Some(&caller.owner), id, body.lease_token, &success)
        .await?;
    Ok(Json(Settled {
        state: "succeeded".into(),
    }))
}

/// Settle the attempt as failed (retryable or not).
#[utoipa::path(post, path = "/v1/worker/tasks/{id}/fail", tag = "worker", operation_id = "fail_task", params(("id" = Uuid, Path)),
    request_body = FailBody, security(("bearer" = [])),
    responses((status = 200, description = "the task's state after the settlement (queued again for a retryable failure)", body = Settled), (status = 404, body = Problem),
        (status = 409, body = Problem), (status = 410, body = Problem), (status = 422, body = Problem)))]
pub async fn fail(
    State(state): State<AppState>,
    caller: Allowed<perm::Work>,
    Path(id): Path<String>,
    Body(body): Body<FailBody>,
) -> Result<Json<Settled>, ApiError> {
    let id = task_id(&id)?;
    if !bounds::ERROR_CODE_BYTES.contains(&body.code.len()) {
        return Err(ApiError::invalid("code", "must be 1 to 64 bytes"));
    }
    bounds::text("code", &body.code)
        .and_then(|_| bounds::text("message", &body.message))
        .map_err(ApiError::Validation)?;
    let max_after = crate::task::settlement::MAX_WORKER_RETRY_AFTER.as_secs();
    if body.retry_after_seconds.is_some_and(|s| s > max_after) {
        return Err(ApiError::invalid(
            "retry_after_seconds",
            format!("must be at most {max_after}"),
        ));
    }
    let (facts, usage_units) = facts(body.usage.as_ref(), body.provenance.as_ref())?;
    let reported = Reported {
        report: Report::Error {
            code: body.code,
            message: body.message,
            retryable: body.retryable,
            retry_after: body.retry_after_seconds.map(Duration::from_secs),
        },
        facts,
        usage_units,
    };
    settle(&state, &caller, id, body.lease_token, reported).await
}

/// Give the task up locally: it waits for an external worker if its privacy
/// allows, else it fails `no_fallback_allowed`.
#[utoipa::path(post, path = "/v1/worker/tasks/{id}/fallback", tag = "worker", operation_id = "fallback_task", params(("id" = Uuid, Path)),
    request_body = FallbackBody, security(("bearer" = [])),
    responses((status = 200, description = "the task's state after the settlement", body = Settled), (status = 404, body = Problem),
        (status = 409, body = Problem), (status = 410, body = Problem), (status = 422, body = Problem)))]
pub async fn fallback(
    State(state): State<AppState>,
    caller: Allowed<perm::Work>,
    Path(id): Path<String>,
    Body(body): Body<FallbackBody>,
) -> Result<Json<Settled>, ApiError> {
    let id = task_id(&id)?;
    bounds::text("reason", &body.reason).map_err(ApiError::Validation)?;
    settle(
        &state,
        &caller,
        id,
        body.lease_token,
        reported(Report::Fallback {
            reason: body.reason,
        }),
    )
    .await
}

/// Acknowledge a requested cancellation: the task is cancelled.
#[utoipa::path(post, path = "/v1/worker/tasks/{id}/cancelled", tag = "worker", operation_id = "acknowledge_cancel", params(("id" = Uuid, Path)),
    request_body = CancelledBody, security(("bearer" = [])),
    responses((status = 200, description = "the task's state after the acknowledgement", body = Settled), (status = 404, body = Problem),
        (status = 409, body = Problem), (status = 410, body = Problem), (status = 422, body = Problem)))]
pub async fn cancelled(
    State(state): State<AppState>,
    caller: Allowed<perm::Work>,
    Path(id): Path<String>,
    Body(body): Body<CancelledBody>,
) -> Result<Json<Settled>, ApiError> {
    let id = task_id(&id)?;
    settle(
        &state,
        &caller,
        id,
        body.lease_token,
        reported(Report::Cancelled),
    )
    .await
}

async fn settle(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
    lease_token: Uuid,
    reported: Reported,
) -> Result<Json<Settled>, ApiError> {
    let settled = state
        .tasklane
        .settle(&caller.owner, id, lease_token, reported)
        .await?;
    Ok(Json(Settled {
        state: settled.as_str().to_owned(),
    }))
}

/// A report that carries no facts of the attempt.
fn reported(report: Report) -> Reported {
    Reported {
        report,
        facts: Default::default(),
        usage_units: None,
    }
}
