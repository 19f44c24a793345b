//! Operator routes (permission `admin`): limits, emergency stops, resource slots, paused
//! task types, app weights, circuit breakers and the overview. `admin` is an operator's
//! permission and is cluster-wide: an admin token may set limits for any app (no app =
//! global), unlike every other permission, which is confined to its token's app.

use axum::extract::{Path, State};
use axum::Json;
use serde::{Deserialize, Serialize};

use crate::http::auth::{perm, Allowed};
use crate::http::error::{ApiError, Problem};
use crate::http::extract::Body;
use crate::http::AppState;
use crate::service::circuits::Circuit;
use crate::service::{EmergencyStopSpec, LimitSpec, Overview};
use crate::store::app_weights::AppWeight;

/// The limit as stored, with its id (as the overview names it).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct LimitSet {
    pub id: i64,
    #[serde(flatten)]
    pub limit: LimitSpec,
}

/// Set a capacity, rate or budget limit (no app: global). Lowering a limit below what is
/// held admits nothing until usage falls under it; running tasks are not disturbed.
#[utoipa::path(put, path = "/v1/admin/limits", tag = "admin", operation_id = "set_limit", request_body = LimitSpec, security(("bearer" = [])),
    responses((status = 200, description = "the limit as stored, with its id", body = LimitSet), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 422, body = Problem)))]
pub async fn set_limit(
    State(state): State<AppState>,
    _admin: Allowed<perm::Admin>,
    Body(spec): Body<LimitSpec>,
) -> Result<Json<LimitSet>, ApiError> {
    let id = state.tasklane.set_limit(&spec).await?;
    Ok(Json(LimitSet { id, limit: spec }))
}

/// Turn the emergency stop on or off, globally or for one app: new submits get 503
/// `emergency_stop` and queued or retrying tasks are not claimed (by any replica or
/// remote worker) until it is lifted; running tasks and replays are not disturbed.
#[utoipa::path(put, path = "/v1/admin/emergency-stop", tag = "admin", operation_id = "set_emergency_stop", request_body = EmergencyStopSpec,
    security(("bearer" = [])),
    responses((status = 200, description = "the emergency stop as set", body = EmergencyStopSpec), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 422, body = Problem)))]
pub async fn set_emergency_stop(
    State(state): State<AppState>,
    _admin: Allowed<perm::Admin>,
    Body(spec): Body<EmergencyStopSpec>,
) -> Result<Json<EmergencyStopSpec>, ApiError> {
    state.tasklane.set_emergency_stop(&spec).await?;
    Ok(Json(spec))
}

/// Body of `PUT /v1/admin/resources/{name}`.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourceBody {
    /// Tasks of this resource running at once across all replicas (0..10000).
    #[schema(minimum = 0, maximum = 10000)]
    pub slots: i64,
}

/// A resource and its slots.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ResourceSet {
    pub name: String,
    pub slots: i64,
}

/// Set how many tasks of a resource may run at once across the cluster.
#[utoipa::path(put, path = "/v1/admin/resources/{name}", tag = "admin", operation_id = "set_resource", params(("name" = String, Path)),
    request_body = ResourceBody, security(("bearer" = [])),
    responses((status = 200, description = "the resource's slots now", body = ResourceSet), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 422, body = Problem)))]
pub async fn set_resource(
    State(state): State<AppState>,
    _admin: Allowed<perm::Admin>,
    Path(name): Path<String>,
    Body(body): Body<ResourceBody>,
) -> Result<Json<ResourceSet>, ApiError> {
    state.tasklane.set_resource(&name, body.slots).await?;
    Ok(Json(ResourceSet {
        name,
        slots: body.slots,
    }))
}

/// Body of `PUT /v1/admin/task-types/{name}/pause`, and its answer with the name.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PauseBody {
    /// true: no claim takes the type's tasks (they stay queued); false: resume.
    pub paused: bool,
}

/// A task type and whether it is paused.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TypePaused {
    pub task_type: String,
    pub paused: bool,
}

/// Pause or resume a task type: while paused no replica or remote worker claims it;
/// submits are still accepted and queued, and the queue deadline still applies.
#[utoipa::path(put, path = "/v1/admin/task-types/{name}/pause", tag = "admin", operation_id = "pause_task_type",
    params(("name" = String, Path)), request_body = PauseBody, security(("bearer" = [])),
    responses((status = 200, description = "the type's state now", body = TypePaused),
        (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 422, description = "unknown_task_type", body = Problem)))]
pub async fn pause_task_type(
    State(state): State<AppState>,
    _admin: Allowed<perm::Admin>,
    Path(name): Path<String>,
    Body(body): Body<PauseBody>,
) -> Result<Json<TypePaused>, ApiError> {
    state.tasklane.set_paused(&name, body.paused).await?;
    Ok(Json(TypePaused {
        task_type: name,
        paused: body.paused,
    }))
}

/// Body of `PUT /v1/admin/apps/{app}/weight`.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WeightBody {
    /// The app's share of the claims' turns against the other apps with claimable work
    /// in the same priority level (1..100; an app never set weighs 1).
    #[schema(minimum = 1, maximum = 100)]
    pub weight: i64,
}

/// An app and its weight, as set.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct WeightSet {
    pub app: String,
    #[schema(minimum = 1, maximum = 100)]
    pub weight: i16,
}

/// Set an app's weight: its share of the claims' turns against the other apps with
/// claimable work in the same priority level (default 1). It applies to the app's tasks
/// that take their turn after it is set; a task takes its turn when it becomes
/// claimable.
#[utoipa::path(put, path = "/v1/admin/apps/{app}/weight", tag = "admin", operation_id = "set_app_weight",
    params(("app" = String, Path)), request_body = WeightBody, security(("bearer" = [])),
    responses((status = 200, description = "the app's weight now", body = WeightSet),
        (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 422, body = Problem)))]
pub async fn set_app_weight(
    State(state): State<AppState>,
    _admin: Allowed<perm::Admin>,
    Path(app): Path<String>,
    Body(body): Body<WeightBody>,
) -> Result<Json<WeightSet>, ApiError> {
    let weight = state.tasklane.set_app_weight(&app, body.weight).await?;
    Ok(Json(WeightSet { app, weight }))
}

/// Every app, as `GET /v1/admin/apps` answers.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct AppList {
    pub items: Vec<AppWeight>,
}

/// The apps with their weights, by app: every app with an unrevoked API token or a
/// weight set, an app never set weighing 1.
#[utoipa::path(get, path = "/v1/admin/apps", tag = "admin", operation_id = "list_apps", security(("bearer" = [])),
    responses((status = 200, description = "every app with a token or a weight, by app", body = AppList), (status = 401, body = Problem), (status = 403, body = Problem)))]
pub async fn list_apps(
    State(state): State<AppState>,
    _admin: Allowed<perm::Admin>,
) -> Result<Json<AppList>, ApiError> {
    Ok(Json(AppList {
        items: state.tasklane.app_weights().await?,
    }))
}

/// Queue depth by state and type, live replicas, resources in use, usage against every
/// limit, emergency stops, paused task types and today's refusals.
#[utoipa::path(get, path = "/v1/admin/overview", tag = "admin", operation_id = "get_overview", security(("bearer" = [])),
    responses((status = 200, description = "queue depth, live replicas, resources in use, limits, refusals", body = Overview), (status = 401, body = Problem), (status = 403, body = Problem)))]
pub async fn overview(
    State(state): State<AppState>,
    _admin: Allowed<perm::Admin>,
) -> Result<Json<Overview>, ApiError> {
    Ok(Json(state.tasklane.overview().await?))
}

/// Every circuit breaker, as `GET /v1/admin/circuits` answers.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CircuitList {
    pub items: Vec<Circuit>,
}

/// Circuit breakers (one per route name, shared by the cluster) that counted a failure
/// since their last reset, by route name; a route not listed is closed.
#[utoipa::path(get, path = "/v1/admin/circuits", tag = "admin", operation_id = "list_circuits", security(("bearer" = [])),
    responses((status = 200, description = "the circuits that counted a failure since their last reset", body = CircuitList), (status = 401, body = Problem), (status = 403, body = Problem)))]
pub async fn list_circuits(
    State(state): State<AppState>,
    _admin: Allowed<perm::Admin>,
) -> Result<Json<CircuitList>, ApiError> {
    Ok(Json(CircuitList {
        items: state.tasklane.circuits().await?,
    }))
}

/// Close a circuit now (no failures counted, no probe): calls go to the route again at
/// once, on every replica.
#[utoipa::path(post, path = "/v1/admin/circuits/{route_name}/reset", tag = "admin", operation_id = "reset_circuit",
    params(("route_name" = String, Path)), security(("bearer" = [])),
    responses((status = 200, description = "the circuit, closed", body = Circuit),
        (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 404, description = "no circuit has this name (a route without failures is closed)", body = Problem)))]
pub async fn reset_circuit(
    State(state): State<AppState>,
    _admin: Allowed<perm::Admin>,
    Path(route_name): Path<String>,
) -> Result<Json<Circuit>, ApiError> {
    Ok(Json(state.tasklane.reset_circuit(&route_name).await?))
}
