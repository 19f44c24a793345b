//! The worker protocol's batches and live output writes: a heartbeat, a completion or
//! an output write of up to 500 attempts in one request, each item fenced on its own lease and answered on
//! its own (a lost lease, a deleted task or an invalid output answers that item, never
//! the batch), and text appended to a running attempt's live output. A request that is
//! malformed as a whole (a field out of bounds, a task named twice) is refused with 422
//! and changes nothing.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;

use crate::http::auth::{perm, Allowed};
use crate::http::dto::ErrorView;
use crate::http::error::{ApiError, Problem};
use crate::http::extract::{task_id, Body};
use crate::http::AppState;
use crate::service::{BeatItem, Completion, OutputItem, ServiceError, Success};
use crate::task::bounds;

use super::worker::{check_result, check_snapshot};
use super::worker_batch_dto::*;
use super::worker_dto::facts;

/// Extend many leases at once, each on its own.
#[utoipa::path(post, path = "/v1/worker/heartbeats", tag = "worker", operation_id = "heartbeat_tasks",
    request_body = HeartbeatsBody, security(("bearer" = [])),
    responses((status = 200, description = "one answer per item, in the order given: `ok` (extended; `cancel_requested` says whether the owner asked to cancel), `lease_lost` or `task_gone`", body = HeartbeatsAnswer),
        (status = 422, description = "`validation_failed` (`field` names the item, e.g. `items[3].progress`; also a task named twice) or `unknown_field`; nothing changed", body = Problem)))]
pub async fn heartbeats(
    State(state): State<AppState>,
    caller: Allowed<perm::Work>,
    Body(body): Body<HeartbeatsBody>,
) -> Result<Json<HeartbeatsAnswer>, ApiError> {
    bounds::key("worker_id", &body.worker_id).map_err(ApiError::Validation)?;
    let items = body
        .items
        .iter()
        .enumerate()
        .map(|(n, item)| beat_item(n, item))
        .collect::<Result<Vec<_>, _>>()?;
    let answers = state
        .tasklane
        .heartbeat_batch(&caller.owner, &items)
        .await?;
    let items = items
        .iter()
        .zip(answers)
        .map(|(item, answer)| match answer {
            Ok(beat) => Ok(HeartbeatItemAnswer {
                id: item.id,
                status: "ok".into(),
                cancel_requested: beat.cancel_requested,
                lease_expires_at: Some(beat.lease_expires_at),
            }),
            Err(error) => Ok(HeartbeatItemAnswer {
                id: item.id,
                status: item_status(error)?.into(),
                cancel_requested: false,
                lease_expires_at: None,
            }),
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    Ok(Json(HeartbeatsAnswer { items }))
}

fn beat_item(n: usize, item: &HeartbeatItem) -> Result<BeatItem, ApiError> {
    if let Some(progress) = item.progress {
        bounds::within(&format!("items[{n}].progress"), progress, &bounds::PROGRESS)
            .map_err(ApiError::Validation)?;
    }
    if let Some(snapshot) = &item.snapshot {
        check_snapshot(&format!("items[{n}].snapshot"), snapshot)?;
    }
    Ok(BeatItem {
        id: item.id,
        lease_token: item.lease_token,
        progress: item.progress.map(|p| p as i16),
        snapshot: item.snapshot.clone(),
        output: item.output.clone(),
    })
}

/// Settle many attempts as succeeded at once, each on its own.
#[utoipa::path(post, path = "/v1/worker/complete", tag = "worker", operation_id = "complete_tasks",
    request_body = CompleteManyBody, security(("bearer" = [])),
    responses((status = 200, description = "one answer per item, in the order given: `succeeded`, `lease_lost`, `task_gone` or `invalid_output` (with `error`; nothing written for that item)", body = CompleteManyAnswer),
        (status = 422, description = "`validation_failed` (`field` names the item, e.g. `items[3].usage.units`; also a task named twice) or `unknown_field`; nothing changed", body = Problem)))]
pub async fn complete_many(
    State(state): State<AppState>,
    caller: Allowed<perm::Work>,
    Body(body): Body<CompleteManyBody>,
) -> Result<Json<CompleteManyAnswer>, ApiError> {
    bounds::key("worker_id", &body.worker_id).map_err(ApiError::Validation)?;
    let mut batch = Vec::with_capacity(body.items.len());
    for (n, item) in body.items.into_iter().enumerate() {
        check_result(&format!("items[{n}].result"), &item.result)?;
        let (facts, usage_units) = facts(item.usage.as_ref(), item.provenance.as_ref())
            .map_err(|error| in_item(n, error))?;
        batch.push(Completion {
            id: item.id,
            lease_token: item.lease_token,
            success: Success {
                result: item.result,
                usage_units,
                facts,
            },
        });
    }
    let answers = state.tasklane.complete_batch(&caller.owner, &batch).await?;
    let items = batch
        .iter()
        .zip(answers)
        .map(|(completion, answer)| {
            let (status, error) = match answer {
                Ok(()) => ("succeeded", None),
                Err(ServiceError::InvalidOutput(message)) => (
                    "invalid_output",
                    Some(ErrorView {
                        code: "invalid_output".into(),
                        message: Some(message),
                    }),
                ),
                Err(error) => (item_status(error)?, None),
            };
            Ok(CompleteItemAnswer {
                id: completion.id,
                status: status.into(),
                error,
            })
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    Ok(Json(CompleteManyAnswer { items }))
}

/// A validation error of item `n`, its field named within the item.
fn in_item(n: usize, error: ApiError) -> ApiError {
    match error {
        ApiError::Validation(mut invalid) => {
            invalid.field = format!("items[{n}].{}", invalid.field);
            ApiError::Validation(invalid)
        }
        other => other,
    }
}

/// An item's lease outcome; any other error fails the request (the database).
fn item_status(error: ServiceError) -> Result<&'static str, ApiError> {
    match error {
        ServiceError::LeaseLost => Ok("lease_lost"),
        ServiceError::TaskGone => Ok("task_gone"),
        error => Err(error.into()),
    }
}

/// Append text to the live output of many running attempts at once, each on its own.
#[utoipa::path(post, path = "/v1/worker/output", tag = "worker", operation_id = "write_outputs",
    request_body = OutputsBody, security(("bearer" = [])),
    responses((status = 200, description = "one answer per item, in the order given: `ok` (appended: observers of `GET /v1/tasks/{id}/output` on any replica see it as `output.delta`), `lease_lost` (nothing appended) or `task_gone`", body = OutputsAnswer),
        (status = 422, description = "`validation_failed` (`field` names the item, e.g. `items[3].text`; also a task named twice) or `unknown_field`; nothing appended", body = Problem)))]
pub async fn write_outputs(
    State(state): State<AppState>,
    caller: Allowed<perm::Work>,
    Body(body): Body<OutputsBody>,
) -> Result<Json<OutputsAnswer>, ApiError> {
    let items: Vec<OutputItem> = body
        .items
        .into_iter()
        .map(|item| OutputItem {
            id: item.id,
            lease_token: item.lease_token,
            text: item.text,
        })
        .collect();
    let answers = state.tasklane.write_outputs(&caller.owner, &items).await?;
    let items = items
        .iter()
        .zip(answers)
        .map(|(item, answer)| {
            let status = match answer {
                Ok(()) => "ok",
                Err(error) => item_status(error)?,
            };
            Ok(OutputItemAnswer {
                id: item.id,
                status: status.into(),
            })
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    Ok(Json(OutputsAnswer { items }))
}

/// Append text to a running attempt's live output.
#[utoipa::path(post, path = "/v1/worker/tasks/{id}/output", tag = "worker", operation_id = "write_task_output", params(("id" = Uuid, Path)),
    request_body = OutputBody, security(("bearer" = [])),
    responses((status = 204, description = "appended: observers of `GET /v1/tasks/{id}/output` on any replica see it as `output.delta`"),
        (status = 404, body = Problem), (status = 409, description = "lease_lost: nothing appended", body = Problem),
        (status = 410, description = "task_gone", body = Problem), (status = 422, body = Problem)))]
pub async fn write_output(
    State(state): State<AppState>,
    caller: Allowed<perm::Work>,
    Path(id): Path<String>,
    Body(body): Body<OutputBody>,
) -> Result<StatusCode, ApiError> {
    let id = task_id(&id)?;
    state
        .tasklane
        .write_output(&caller.owner, id, body.lease_token, &body.text)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
