//! `GET /v1/tasks/{id}/attempts`: every attempt of a task, oldest first, with where it
//! ran (and what the provider said answered), how it ended and what it consumed. Scope
//! tokens see no provider, model, response model, system fingerprint, route, route name
//! or error message.

use axum::extract::{Path, State};
use axum::Json;
use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::http::auth::{perm, Allowed};
use crate::http::dto::{ErrorView, UsageView};
use crate::http::error::{ApiError, Problem};
use crate::http::extract::task_id;
use crate::http::AppState;
use crate::service::AttemptRecord;

/// One attempt of a task.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AttemptView {
    /// 1-based over the task's whole life (an owner's retry keeps counting).
    pub attempt: i32,
    /// `local` or `external`; absent for scope tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub route: Option<Option<String>>,
    /// Absent for scope tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub route_name: Option<Option<String>>,
    /// Absent for scope tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub provider: Option<Option<String>>,
    /// Absent for scope tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub model: Option<Option<String>>,
    /// The model the provider says answered (often a dated snapshot of `model`), null
    /// when its answer named none; absent for scope tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub response_model: Option<Option<String>>,
    /// The provider's `system_fingerprint`, null when it gave none; absent for scope
    /// tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub system_fingerprint: Option<Option<String>>,
    pub started_at: DateTime<Utc>,
    /// Null while running.
    pub finished_at: Option<DateTime<Utc>>,
    /// `running`, `succeeded`, `retry`, `fallback`, `failed`, `cancelled`, `lost` (lease
    /// expired or replica gone) or `timed_out`.
    #[schema(pattern = "^(running|succeeded|retry|fallback|failed|cancelled|lost|timed_out)$")]
    pub outcome: String,
    /// Stable code and (not for scope tokens) bounded message; null when none.
    pub error: Option<ErrorView>,
    /// What the provider reported; null when nothing was.
    pub usage: Option<UsageView>,
}

impl AttemptView {
    /// The view of `record`; `redacted` for scope tokens.
    pub fn new(record: AttemptRecord, redacted: bool) -> Self {
        let shown = |value: Option<String>| (!redacted).then_some(value);
        AttemptView {
            attempt: record.attempt,
            route: shown(record.route),
            route_name: shown(record.route_name),
            provider: shown(record.provider),
            model: shown(record.model),
            response_model: shown(record.response_model),
            system_fingerprint: shown(record.system_fingerprint),
            started_at: record.started_at,
            finished_at: record.finished_at,
            outcome: record.outcome.as_str().to_owned(),
            error: record.error_code.map(|code| ErrorView {
                code,
                message: if redacted { None } else { record.error_message },
            }),
            usage: record.usage.map(UsageView::tokens),
        }
    }
}

/// A task's attempts, oldest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AttemptList {
    pub items: Vec<AttemptView>,
}

/// The attempts of one task, oldest first (a running attempt last).
#[utoipa::path(get, path = "/v1/tasks/{id}/attempts", tag = "tasks", operation_id = "list_attempts", params(("id" = Uuid, Path)),
    security(("bearer" = [])),
    responses((status = 200, description = "the task's attempts, oldest first", body = AttemptList), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn task_attempts(
    State(state): State<AppState>,
    caller: Allowed<perm::Read>,
    Path(id): Path<String>,
) -> Result<Json<AttemptList>, ApiError> {
    let attempts = state
        .tasklane
        .attempts(&caller.owner, task_id(&id)?)
        .await?;
    let redacted = caller.is_scoped();
    Ok(Json(AttemptList {
        items: attempts
            .into_iter()
            .map(|a| AttemptView::new(a, redacted))
            .collect(),
    }))
}
