//! Webhook endpoints over HTTP (permission `webhooks`, app tokens only): create or
//! update, list, delete, rotate the secret, the delivery log, redeliver; translated
//! onto `service::webhooks`. A secret appears in an answer only when it was just
//! created or rotated.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::http::auth::{perm, Allowed};
use crate::http::error::{ApiError, Problem};
use crate::http::extract::{task_id, Body, QueryOf};
use crate::http::AppState;
use crate::service::webhooks::{EndpointWithSecret, WebhookSpec, MAX_DELIVERY_PAGE};
use crate::store::webhooks::{Delivery, Endpoint};

/// Body of `PUT /v1/webhooks/{name}`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookBody {
    /// Where notifications are POSTed: an absolute http or https URL (≤ 2048 bytes).
    #[schema(max_length = 2048)]
    pub url: String,
    /// Which terminal events to send: `task.succeeded`, `task.failed`, `task.cancelled`.
    #[schema(min_items = 1, max_items = 3)]
    pub events: Vec<String>,
    /// Your own signing secret (`whsec_` + base64 of 24..64 bytes); one is generated
    /// at creation when absent. Given on an update, it becomes the current secret and
    /// the previous one signs for 24 h more.
    #[serde(default)]
    pub secret: Option<String>,
}

/// An endpoint. `secret` only in the answer that created or rotated it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct EndpointView {
    pub name: String,
    pub url: String,
    pub events: Vec<String>,
    /// True after a receiver answered 410; a PUT enables it again.
    pub disabled: bool,
    pub created_at: DateTime<Utc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

impl EndpointView {
    fn new(endpoint: Endpoint, secret: Option<String>) -> Self {
        EndpointView {
            name: endpoint.name,
            url: endpoint.url,
            events: endpoint.events,
            disabled: endpoint.disabled,
            created_at: endpoint.created_at,
            secret,
        }
    }
}

impl From<EndpointWithSecret> for EndpointView {
    fn from(e: EndpointWithSecret) -> Self {
        EndpointView::new(e.endpoint, e.secret)
    }
}

/// The app's endpoints.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct EndpointList {
    pub items: Vec<EndpointView>,
}

/// Create or update the endpoint `name` of the token's app (and enable it again).
#[utoipa::path(put, path = "/v1/webhooks/{name}", tag = "webhooks",
    params(("name" = String, Path, description = "1..100 of A-Z a-z 0-9 . _ -")),
    request_body = WebhookBody, security(("bearer" = [])),
    responses((status = 200, description = "the endpoint; its secret when this call created it", body = EndpointView), (status = 400, body = Problem),
        (status = 401, body = Problem), (status = 403, body = Problem), (status = 413, body = Problem),
        (status = 422, body = Problem)))]
pub async fn put_webhook(
    State(state): State<AppState>,
    caller: Allowed<perm::Webhooks>,
    Path(name): Path<String>,
    Body(body): Body<WebhookBody>,
) -> Result<Json<EndpointView>, ApiError> {
    let spec = WebhookSpec {
        url: body.url,
        events: body.events,
        secret: body.secret,
    };
    let put = state
        .tasklane
        .put_webhook(&caller.owner, &name, &spec)
        .await?;
    Ok(Json(put.into()))
}

/// The token's app's endpoints (never their secrets).
#[utoipa::path(get, path = "/v1/webhooks", tag = "webhooks", security(("bearer" = [])),
    responses((status = 200, description = "the app's endpoints, without secrets", body = EndpointList), (status = 401, body = Problem), (status = 403, body = Problem)))]
pub async fn list_webhooks(
    State(state): State<AppState>,
    caller: Allowed<perm::Webhooks>,
) -> Result<Json<EndpointList>, ApiError> {
    let items = state.tasklane.list_webhooks(&caller.owner).await?;
    Ok(Json(EndpointList {
        items: items
            .into_iter()
            .map(|e| EndpointView::new(e, None))
            .collect(),
    }))
}

/// Delete an endpoint with its secrets and its notifications (pending ones are not sent).
#[utoipa::path(delete, path = "/v1/webhooks/{name}", tag = "webhooks",
    params(("name" = String, Path)), security(("bearer" = [])),
    responses((status = 204, description = "deleted"), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem), (status = 422, body = Problem)))]
pub async fn delete_webhook(
    State(state): State<AppState>,
    caller: Allowed<perm::Webhooks>,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    state.tasklane.delete_webhook(&caller.owner, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A new signing secret; the previous one still signs (a second signature) for 24 h.
#[utoipa::path(post, path = "/v1/webhooks/{name}/rotate-secret", tag = "webhooks",
    params(("name" = String, Path)), security(("bearer" = [])),
    responses((status = 200, description = "the endpoint with its new secret", body = EndpointView), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem), (status = 422, body = Problem)))]
pub async fn rotate_secret(
    State(state): State<AppState>,
    caller: Allowed<perm::Webhooks>,
    Path(name): Path<String>,
) -> Result<Json<EndpointView>, ApiError> {
    let rotated = state
        .tasklane
        .rotate_webhook_secret(&caller.owner, &name)
        .await?;
    Ok(Json(rotated.into()))
}

/// Query of the delivery log.
#[derive(Debug, Clone, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DeliveriesQuery {
    /// 1..100, default 100.
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
}

/// One notification of the log.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct DeliveryView {
    /// Also its `webhook-id` header.
    pub id: Uuid,
    pub task_id: Uuid,
    pub event: String,
    /// `pending`, `delivered` or `failed`.
    pub status: String,
    /// Attempts made (counted when each starts).
    pub attempts: i32,
    /// The last answer's HTTP status.
    pub last_status: Option<i32>,
    /// Why the last attempt did not deliver.
    pub last_error: Option<String>,
    /// Pending only: when the next attempt is due.
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub delivered_at: Option<DateTime<Utc>>,
}

impl From<Delivery> for DeliveryView {
    fn from(d: Delivery) -> Self {
        DeliveryView {
            id: d.id,
            task_id: d.task_id,
            event: d.event,
            status: d.status,
            attempts: d.attempts,
            last_status: d.last_status,
            last_error: d.last_error,
            next_attempt_at: d.next_attempt_at,
            delivered_at: d.delivered_at,
        }
    }
}

/// The newest notifications of an endpoint.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct DeliveryList {
    pub items: Vec<DeliveryView>,
}

/// The endpoint's newest notifications, with the outcome of their last attempt.
#[utoipa::path(get, path = "/v1/webhooks/{name}/deliveries", tag = "webhooks",
    params(("name" = String, Path), DeliveriesQuery), security(("bearer" = [])),
    responses((status = 200, description = "the newest notifications, newest first", body = DeliveryList), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem), (status = 422, body = Problem)))]
pub async fn deliveries(
    State(state): State<AppState>,
    caller: Allowed<perm::Webhooks>,
    Path(name): Path<String>,
    QueryOf(query): QueryOf<DeliveriesQuery>,
) -> Result<Json<DeliveryList>, ApiError> {
    let limit = query.limit.unwrap_or(MAX_DELIVERY_PAGE);
    let items = state
        .tasklane
        .webhook_deliveries(&caller.owner, &name, limit)
        .await?;
    Ok(Json(DeliveryList {
        items: items.into_iter().map(DeliveryView::from).collect(),
    }))
}

/// Send a notification again, with the same `webhook-id` and a fresh retry schedule.
#[utoipa::path(post, path = "/v1/webhooks/{name}/deliveries/{id}/redeliver", tag = "webhooks",
    params(("name" = String, Path), ("id" = String, Path)), security(("bearer" = [])),
    responses((status = 202, description = "queued for delivery"), (status = 400, body = Problem),
        (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem),
        (status = 409, description = "endpoint_disabled", body = Problem), (status = 422, body = Problem)))]
pub async fn redeliver(
    State(state): State<AppState>,
    caller: Allowed<perm::Webhooks>,
    Path((name, id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let id = task_id(&id)?;
    state
        .tasklane
        .redeliver_webhook(&caller.owner, &name, id)
        .await?;
    Ok(StatusCode::ACCEPTED)
}
