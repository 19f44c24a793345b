//! Batch submit: up to 1,000 submits in one request and one statement, each item
//! answered exactly as `POST /v1/tasks` would answer it alone (status, id, code,
//! Retry-After). Items are independent: one that cannot be read, is invalid or is
//! refused does not affect the others.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::http::auth::{perm, Allowed};
use crate::http::dto::SubmitBody;
use crate::http::error::{ApiError, Problem};
use crate::http::extract::{parse_json, Body};
use crate::http::AppState;
use crate::service::{Submitted, MAX_BATCH};
use crate::task::SubmitRequest;
use crate::telemetry::spans;
use tracing::Instrument as _;

/// Body of `POST /v1/tasks/batch`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchBody {
    /// 1..1000 submit bodies, each as `POST /v1/tasks` takes it. Kept raw until each is
    /// read on its own, so an item is read exactly as a single submit's body would be
    /// (a repeated key included) and one bad item refuses only itself.
    #[schema(value_type = Vec<SubmitBody>, min_items = 1, max_items = 1000)]
    pub tasks: Vec<Box<serde_json::value::RawValue>>,
}

/// One item's answer: what `POST /v1/tasks` would have answered for it alone.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BatchItem {
    /// The HTTP status a single submit would have had (202, 200, 409, 410, 422, 429, 503).
    pub status: u16,
    /// The task's id, when there is a task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<Uuid>,
    /// The stable error code, when refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<&'static str>,
    /// Seconds to wait before submitting it again (429, 503).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
}

/// The answers, one per item, in order.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BatchAnswer {
    pub items: Vec<BatchItem>,
}

/// Submit up to 1,000 tasks at once; each item answered as a single submit would be.
#[utoipa::path(post, path = "/v1/tasks/batch", tag = "tasks", operation_id = "submit_batch", request_body = BatchBody,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "one answer per item, in order", body = BatchAnswer),
        (status = 400, description = "malformed_json", body = Problem),
        (status = 401, description = "unauthorized", body = Problem),
        (status = 403, description = "forbidden", body = Problem),
        (status = 413, description = "payload_too_large", body = Problem),
        (status = 422, description = "validation_failed: not 1 to 1000 items", body = Problem)))]
pub async fn submit_batch(
    State(state): State<AppState>,
    caller: Allowed<perm::Submit>,
    headers: HeaderMap,
    Body(body): Body<BatchBody>,
) -> Result<Json<BatchAnswer>, ApiError> {
    if body.tasks.is_empty() || body.tasks.len() > MAX_BATCH {
        return Err(ApiError::invalid(
            "tasks",
            format!("must hold 1 to {MAX_BATCH} tasks"),
        ));
    }
    // Items that cannot be read are answered here; the rest go to the service.
    let mut items: Vec<Option<BatchItem>> = Vec::with_capacity(body.tasks.len());
    let mut readable = Vec::new();
    for raw in &body.tasks {
        match parse_json::<SubmitBody>(raw.get().as_bytes()) {
            Ok(item) => {
                readable.push(SubmitRequest::from(item));
                items.push(None);
            }
            Err(error) => items.push(Some(refused(error))),
        }
    }
    let traceparent = headers.get("traceparent").and_then(|v| v.to_str().ok());
    if !readable.is_empty() {
        // One span for the batch, in the caller's trace; every task keeps its context.
        let span = tracing::info_span!("tasklane.submit_batch", items = readable.len());
        spans::continue_trace(&span, traceparent);
        let answers = state
            .tasklane
            .submit_batch(&caller.owner, &readable, traceparent)
            .instrument(span)
            .await?;
        let mut answers = answers.into_iter();
        for slot in items.iter_mut().filter(|slot| slot.is_none()) {
            let answer = answers.next().expect("one answer per readable item");
            *slot = Some(match answer {
                Ok(submitted) => accepted(&submitted),
                Err(error) => refused(ApiError::from(error)),
            });
        }
    }
    Ok(Json(BatchAnswer {
        items: items.into_iter().map(|i| i.expect("answered")).collect(),
    }))
}

fn accepted(submitted: &Submitted) -> BatchItem {
    BatchItem {
        status: super::tasks::submit_status(submitted).as_u16(),
        id: Some(submitted.task.id),
        code: None,
        retry_after: None,
    }
}

fn refused(error: ApiError) -> BatchItem {
    let (status, code) = error.status_and_code();
    if status == StatusCode::INTERNAL_SERVER_ERROR {
        // Logged where it is answered, as for a single request.
        tracing::error!(error = %format!("{error:#}"), "internal error answering a batch item");
    }
    BatchItem {
        status: status.as_u16(),
        id: None,
        code: Some(code),
        retry_after: match &error {
            ApiError::Refused(refusal) => Some(refusal.retry_after_seconds()),
            _ => None,
        },
    }
}
