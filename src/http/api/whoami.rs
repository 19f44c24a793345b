//! `GET /v1/whoami`: what the caller's token is and may do, so a client (the web
//! console above all) offers only what the token allows. Any valid token may ask; the
//! answer holds nothing the token's holder does not already know, and never the secret.

use axum::extract::State;
use axum::Json;
use serde::Serialize;

use crate::http::auth::AnyToken;
use crate::http::error::{ApiError, Problem};
use crate::http::AppState;

/// The caller's token: its owner, its permissions, and the task types this replica
/// accepts at submit.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Whoami {
    pub app: String,
    /// Present for a scope token: it sees only this scope, with the redacted view.
    pub scope_id: Option<String>,
    /// The token's permissions (`submit`, `read`, `cancel`, ..., `admin`).
    pub permissions: Vec<String>,
    /// The task types registered on this replica, sorted by name.
    pub task_types: Vec<String>,
}

/// The caller's token: app, scope, permissions, and the task types a submit accepts.
#[utoipa::path(get, path = "/v1/whoami", tag = "tokens", operation_id = "whoami", security(("bearer" = [])),
    responses((status = 200, description = "who the token speaks for and what it may do", body = Whoami), (status = 401, body = Problem)))]
pub async fn whoami(
    State(state): State<AppState>,
    AnyToken(caller): AnyToken,
) -> Result<Json<Whoami>, ApiError> {
    // Sorted already (the catalog is a sorted map).
    let task_types = state.tasklane.task_types().names();
    Ok(Json(Whoami {
        app: caller.owner.app.clone(),
        scope_id: caller.owner.scope_id.clone(),
        permissions: caller.permissions().to_vec(),
        task_types,
    }))
}
