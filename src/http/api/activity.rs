//! `GET /v1/admin/activity` (permission `admin`): tasks submitted and finished per
//! minute over the last hour, cluster-wide, for the console's chart.

use axum::extract::State;
use axum::Json;
use serde::Serialize;

use crate::http::auth::{perm, Allowed};
use crate::http::error::{ApiError, Problem};
use crate::http::AppState;
use crate::service::ActivityMinute;

/// The last 60 minutes, oldest first, the current (partial) minute last.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Activity {
    pub minutes: Vec<ActivityMinute>,
}

/// Tasks submitted and finished (by terminal state) in each of the last 60 minutes.
#[utoipa::path(get, path = "/v1/admin/activity", tag = "admin", operation_id = "activity", security(("bearer" = [])),
    responses((status = 200, description = "tasks submitted and finished in each of the last 60 minutes", body = Activity), (status = 401, body = Problem), (status = 403, body = Problem)))]
pub async fn activity(
    State(state): State<AppState>,
    _admin: Allowed<perm::Admin>,
) -> Result<Json<Activity>, ApiError> {
    Ok(Json(Activity {
        minutes: state.tasklane.activity().await?,
    }))
}
