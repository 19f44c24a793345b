//! Operations routes: liveness, readiness (database answers and schema current, and the
//! replica is not shutting down), Prometheus metrics.

use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::http::error::{ApiError, Problem};
use crate::http::AppState;

#[derive(Debug, Serialize, ToSchema)]
pub struct Status {
    pub status: &'static str,
}

/// 200 while the process runs.
#[utoipa::path(get, path = "/healthz", tag = "operations", operation_id = "healthz", responses((status = 200, description = "the process runs", body = Status)))]
pub async fn healthz() -> Json<Status> {
    Json(Status { status: "ok" })
}

/// 200 when the database answers and the schema is current; 503 otherwise and from
/// the start of a shutdown.
#[utoipa::path(get, path = "/readyz", tag = "operations", operation_id = "readyz",
    responses((status = 200, description = "ready: the database answers and the schema is current", body = Status), (status = 503, body = Problem)))]
pub async fn readyz(State(state): State<AppState>) -> Result<Json<Status>, ApiError> {
    if !state.ready.load(Ordering::SeqCst) {
        return Err(ApiError::NotReady);
    }
    if !state.tasklane.is_ready().await {
        return Err(ApiError::NotReady);
    }
    Ok(Json(Status { status: "ready" }))
}

/// Prometheus text exposition.
#[utoipa::path(get, path = "/metrics", tag = "operations", operation_id = "get_metrics",
    responses((status = 200, description = "Prometheus text exposition", content_type = "text/plain", body = String)))]
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.telemetry.render(),
    )
}
