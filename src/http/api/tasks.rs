//! The application's task routes: submit (with `?wait=`), get, list, cancel, retry.
//! Every read and write is filtered by the caller's app (and scope): another owner's
//! task is a 404.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use uuid::Uuid;

use crate::http::auth::{perm, Allowed};
use crate::http::dto::{location, ListQuery, SubmitBody, SubmitQuery, TaskPage, TaskView};
use crate::http::error::{ApiError, Problem};
use crate::http::extract::{task_id, Body, QueryOf};
use crate::http::AppState;
use crate::service::{ListFilter, Owner, ServiceError, SubmitOutcome, Submitted, TaskRecord};
use crate::telemetry::spans;
use tracing::Instrument as _;

/// The longest `?wait=` in seconds.
pub const MAX_WAIT_SECONDS: u64 = 60;
/// Page size of a listing without `limit`.
const DEFAULT_PAGE: i64 = 50;

/// Submit a task, or join or replay the one with the same identity.
#[utoipa::path(post, path = "/v1/tasks", tag = "tasks", operation_id = "submit_task", params(SubmitQuery), request_body = SubmitBody,
    security(("bearer" = [])),
    responses(
        (status = 202, description = "created or in flight", body = TaskView, headers(("Location" = String))),
        (status = 200, description = "terminal: a replay, or finished within `wait`", body = TaskView),
        (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 409, description = "idempotency_conflict", body = Problem),
        (status = 410, description = "scope_deleted", body = Problem),
        (status = 413, body = Problem), (status = 422, body = Problem),
        (status = 429, description = "capacity_exhausted, rate_limited, budget_exhausted", body = Problem),
        (status = 503, description = "emergency_stop", body = Problem)))]
pub async fn submit(
    State(state): State<AppState>,
    caller: Allowed<perm::Submit>,
    QueryOf(query): QueryOf<SubmitQuery>,
    headers: HeaderMap,
    Body(body): Body<SubmitBody>,
) -> Result<Response, ApiError> {
    // The submit joins the caller's trace (W3C `traceparent`), and the task keeps it.
    let traceparent = headers
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    // The type is not validated yet: what the span carries is bounded.
    let task_type = crate::task::bounds::truncate(&body.task_type, 200);
    let span = tracing::info_span!("tasklane.submit", task_type = %task_type);
    spans::continue_trace(&span, traceparent.as_deref());
    submit_in_span(state, caller, query, traceparent, body)
        .instrument(span)
        .await
}

async fn submit_in_span(
    state: AppState,
    caller: Allowed<perm::Submit>,
    query: SubmitQuery,
    traceparent: Option<String>,
    body: SubmitBody,
) -> Result<Response, ApiError> {
    let wait = query.wait.unwrap_or(0);
    if wait > MAX_WAIT_SECONDS {
        return Err(ApiError::invalid(
            "wait",
            format!("must be between 0 and {MAX_WAIT_SECONDS}"),
        ));
    }
    let submitted = state
        .tasklane
        .submit_with(&caller.owner, &body.into(), traceparent.as_deref(), || {})
        .await?;
    let mut task = submitted.task;
    if wait > 0 && !task.state.is_terminal() {
        let owner = Owner {
            app: caller.owner.app.clone(),
            scope_id: Some(task.scope_id.clone()),
        };
        match wait_terminal(&state, &owner, task.id, Duration::from_secs(wait)).await? {
            Some(latest) => task = latest,
            None => return Err(ApiError::NotFound),
        }
    }
    if submitted.outcome != SubmitOutcome::Created && task.attempts.is_none() {
        // A replay or a join shows its attempts' usage and provenance like a read does.
        state
            .tasklane
            .with_attempts(std::slice::from_mut(&mut task))
            .await?;
    }
    let status = status_of(task.state.is_terminal(), submitted.outcome);
    let id = task.id;
    let mut response = (status, Json(TaskView::new(task, caller.is_scoped()))).into_response();
    if status == StatusCode::ACCEPTED {
        let value = location(id)
            .parse()
            .expect("a task URL is a valid header value");
        response.headers_mut().insert(header::LOCATION, value);
    }
    Ok(response)
}

/// A submit's status: 200 for a terminal task (a replay, or finished within `wait`),
/// 202 for one created or in flight.
fn status_of(terminal: bool, outcome: SubmitOutcome) -> StatusCode {
    if terminal || outcome == SubmitOutcome::Existing {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    }
}

/// The status `POST /v1/tasks` without `wait` answers `submitted` with.
pub fn submit_status(submitted: &Submitted) -> StatusCode {
    status_of(submitted.task.state.is_terminal(), submitted.outcome)
}

/// Re-reads the task until it is terminal, `wait` (at most the replica's
/// `--max-wait-seconds`) passes, or the server stops; `None` when it disappeared. Wakes
/// on the replica's shared listener, not by polling.
pub async fn wait_terminal(
    state: &AppState,
    owner: &Owner,
    id: Uuid,
    wait: Duration,
) -> Result<Option<TaskRecord>, ApiError> {
    let deadline = state.long_poll_deadline(wait);
    let mut waiter = state.watch.subscribe(id);
    loop {
        let task = match state.tasklane.get(owner, id).await {
            Ok(task) => task,
            Err(ServiceError::NotFound) => return Ok(None),
            Err(error) => return Err(error.into()),
        };
        if task.state.is_terminal() {
            return Ok(Some(task));
        }
        tokio::select! {
            _ = waiter.changed() => {}
            _ = tokio::time::sleep_until(deadline) => return Ok(Some(task)),
            _ = state.stopping.cancelled() => return Ok(Some(task)),
        }
    }
}

/// One task.
#[utoipa::path(get, path = "/v1/tasks/{id}", tag = "tasks", operation_id = "get_task", params(("id" = Uuid, Path)),
    security(("bearer" = [])),
    responses((status = 200, description = "the task", body = TaskView), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn get_task(
    State(state): State<AppState>,
    caller: Allowed<perm::Read>,
    Path(id): Path<String>,
) -> Result<Json<TaskView>, ApiError> {
    let task = state.tasklane.get(&caller.owner, task_id(&id)?).await?;
    Ok(Json(TaskView::new(task, caller.is_scoped())))
}

/// The caller's tasks, newest first, keyset-paged.
#[utoipa::path(get, path = "/v1/tasks", tag = "tasks", operation_id = "list_tasks", params(ListQuery), security(("bearer" = [])),
    responses((status = 200, description = "a page of the caller's tasks, newest first", body = TaskPage), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 422, body = Problem)))]
pub async fn list_tasks(
    State(state): State<AppState>,
    caller: Allowed<perm::Read>,
    QueryOf(query): QueryOf<ListQuery>,
) -> Result<Json<TaskPage>, ApiError> {
    let filter = ListFilter {
        scope_id: query.scope_id,
        state: query
            .state
            .map(|s| {
                s.parse()
                    .map_err(|_| ApiError::invalid("state", format!("unknown state {s:?}")))
            })
            .transpose()?,
        task_type: query.task_type,
        source_id: query.source_id,
        before: query
            .cursor
            .map(|c| {
                Uuid::parse_str(&c)
                    .map_err(|_| ApiError::invalid("cursor", "not a cursor of this listing"))
            })
            .transpose()?,
    };
    let limit = query.limit.unwrap_or(DEFAULT_PAGE);
    let page = state.tasklane.list(&caller.owner, &filter, limit).await?;
    let items = page
        .tasks
        .into_iter()
        .map(|t| TaskView::new(t, caller.is_scoped()))
        .collect();
    Ok(Json(TaskPage {
        items,
        next_cursor: page.next.map(|id| id.to_string()),
    }))
}

/// Cancel: queued now, running cooperatively, terminal unchanged.
#[utoipa::path(post, path = "/v1/tasks/{id}/cancel", tag = "tasks", operation_id = "cancel_task", params(("id" = Uuid, Path)),
    security(("bearer" = [])),
    responses((status = 200, description = "the task: `cancelled` (was queued), `cancelling` (running) or unchanged (terminal)", body = TaskView), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn cancel_task(
    State(state): State<AppState>,
    caller: Allowed<perm::Cancel>,
    Path(id): Path<String>,
) -> Result<Json<TaskView>, ApiError> {
    let task = state.tasklane.cancel(&caller.owner, task_id(&id)?).await?;
    Ok(Json(TaskView::new(task, caller.is_scoped())))
}

/// Retry a failed or cancelled task with a fresh attempt budget.
#[utoipa::path(post, path = "/v1/tasks/{id}/retry", tag = "tasks", operation_id = "retry_task", params(("id" = Uuid, Path)),
    security(("bearer" = [])),
    responses((status = 200, description = "the task, queued again with a fresh attempt budget", body = TaskView), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem),
        (status = 409, description = "not_retryable", body = Problem),
        (status = 410, description = "scope_deleted", body = Problem),
        (status = 429, description = "capacity_exhausted, rate_limited, budget_exhausted", body = Problem),
        (status = 503, description = "emergency_stop", body = Problem)))]
pub async fn retry_task(
    State(state): State<AppState>,
    caller: Allowed<perm::Submit>,
    Path(id): Path<String>,
) -> Result<Json<TaskView>, ApiError> {
    let task = state.tasklane.retry(&caller.owner, task_id(&id)?).await?;
    Ok(Json(TaskView::new(task, caller.is_scoped())))
}
