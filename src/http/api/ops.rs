//! Operations routes: liveness, readiness (database answers and schema current, and the
//! replica is not shutting down), Prometheus metrics.

use std::sync::atomic::Ordering;
use std::time::Duration;

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

/// How long readiness waits for the database: a probe answers within a second whatever
/// the database does (a black-holed connection would otherwise hold it until the
/// prober's own timeout, which reads as "unknown", not "unready").
const READINESS_BOUND: Duration = Duration::from_millis(900);

/// 200 when the database answers within the bound, takes writes and has the current
/// schema; 503 otherwise, saying why, and from the start of a shutdown.
#[utoipa::path(get, path = "/readyz", tag = "operations", operation_id = "readyz",
    responses((status = 200, description = "ready: the database answers, takes writes and its schema is current", body = Status), (status = 503, body = Problem)))]
pub async fn readyz(State(state): State<AppState>) -> Result<Json<Status>, ApiError> {
    if !state.ready.load(Ordering::SeqCst) {
        return Err(ApiError::NotReady("the replica is shutting down".into()));
    }
    match tokio::time::timeout(READINESS_BOUND, state.tasklane.readiness()).await {
        Ok(Ok(())) => Ok(Json(Status { status: "ready" })),
        Ok(Err(why)) => Err(ApiError::NotReady(why)),
        Err(_) => Err(ApiError::NotReady(format!(
            "the database did not answer within {} ms",
            READINESS_BOUND.as_millis()
        ))),
    }
}

/// Prometheus text exposition.
#[utoipa::path(get, path = "/metrics", tag = "operations", operation_id = "get_metrics",
    responses((status = 200, description = "Prometheus text exposition", content_type = "text/plain", body = String)))]
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    render_metrics(&state.telemetry)
}

/// The Prometheus text of every instrument of the process.
pub fn render_metrics(telemetry: &crate::telemetry::Telemetry) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        telemetry.render(),
    )
}
