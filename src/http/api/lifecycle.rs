//! The application lifecycle over HTTP: release, owner deletion and fences,
//! and the reconciliation listing, translated onto the service (`service::lifecycle`),
//! which calls the same SQL functions applications call inside their own transactions.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use base64::Engine;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::http::auth::{perm, Allowed};
use crate::http::error::{ApiError, Problem};
use crate::http::extract::{Body, QueryOf};
use crate::http::AppState;
use crate::service::SourceRef;

/// Body of `POST /v1/releases`: the identity of the task to release.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReleaseBody {
    /// 1..200 bytes.
    #[schema(min_length = 1, max_length = 200)]
    pub scope_id: String,
    /// 1..200 bytes.
    #[schema(min_length = 1, max_length = 200)]
    pub effect_key: String,
    /// 1..200 bytes; absent is the "no subject" identity.
    #[schema(min_length = 1, max_length = 200)]
    #[serde(default)]
    pub usage_subject: Option<String>,
}

/// Whether a task had the identity, and since when it is released.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Released {
    pub released: bool,
    pub released_at: Option<DateTime<Utc>>,
}

/// Release the task with this identity: the app has settled its result. Starts the
/// retention clock; never cancels. A repeat keeps the first time.
#[utoipa::path(post, path = "/v1/releases", tag = "lifecycle", operation_id = "release_task", request_body = ReleaseBody,
    security(("bearer" = [])),
    responses((status = 200, description = "whether a task has this identity, and since when it is released", body = Released), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 413, body = Problem), (status = 422, body = Problem)))]
pub async fn release(
    State(state): State<AppState>,
    caller: Allowed<perm::Release>,
    Body(body): Body<ReleaseBody>,
) -> Result<Json<Released>, ApiError> {
    let released_at = state
        .tasklane
        .release(
            &caller.owner,
            &body.scope_id,
            &body.effect_key,
            body.usage_subject.as_deref(),
        )
        .await?;
    Ok(Json(Released {
        released: released_at.is_some(),
        released_at,
    }))
}

/// Query of a scope deletion.
#[derive(Debug, Clone, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DeleteQuery {
    /// Delete only the tasks with exactly this source (no pattern, no prefix).
    pub source_id: Option<String>,
    /// Refuse later submits for the scope (410 scope_deleted) until the fence is lifted.
    pub fence: Option<bool>,
}

/// How many tasks a deletion removed.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Deleted {
    pub deleted: u64,
}

/// Delete the scope's tasks in every state (or only the exact source), serialized with
/// admission for the scope; optionally fence the scope.
#[utoipa::path(delete, path = "/v1/scopes/{scope_id}/tasks", tag = "lifecycle", operation_id = "delete_scope_tasks",
    params(("scope_id" = String, Path), DeleteQuery), security(("bearer" = [])),
    responses((status = 200, description = "how many tasks were deleted", body = Deleted), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 422, body = Problem)))]
pub async fn delete_tasks(
    State(state): State<AppState>,
    caller: Allowed<perm::Delete>,
    Path(scope_id): Path<String>,
    QueryOf(query): QueryOf<DeleteQuery>,
) -> Result<Json<Deleted>, ApiError> {
    let deleted = state
        .tasklane
        .delete_tasks(
            &caller.owner,
            &scope_id,
            query.source_id.as_deref(),
            query.fence.unwrap_or(false),
        )
        .await?;
    Ok(Json(Deleted { deleted }))
}

/// Lift a scope's fence: submits for it are admitted again.
#[utoipa::path(delete, path = "/v1/scopes/{scope_id}/fence", tag = "lifecycle", operation_id = "lift_scope_fence",
    params(("scope_id" = String, Path)), security(("bearer" = [])),
    responses((status = 204, description = "no fence remains"), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 422, body = Problem)))]
pub async fn lift_fence(
    State(state): State<AppState>,
    caller: Allowed<perm::Delete>,
    Path(scope_id): Path<String>,
) -> Result<StatusCode, ApiError> {
    state.tasklane.lift_fence(&caller.owner, &scope_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Query of the reconciliation listing.
#[derive(Debug, Clone, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct UnreleasedQuery {
    /// The `next_cursor` of the previous page.
    pub after: Option<String>,
    /// 1..100, default 100.
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
}

/// One page of `(scope, source)` pairs with unreleased tasks.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SourcePage {
    pub items: Vec<SourceItem>,
    /// Pass as `after` for the next page; null on the last one.
    pub next_cursor: Option<String>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SourceItem {
    pub scope_id: String,
    pub source_id: Option<String>,
}

/// Distinct `(scope, source)` pairs with unreleased tasks, keyset-paged: for
/// reconciling owners that no longer exist. An app-wide view, so scope tokens may not.
#[utoipa::path(get, path = "/v1/unreleased-sources", tag = "lifecycle", operation_id = "list_unreleased_sources", params(UnreleasedQuery),
    security(("bearer" = [])),
    responses((status = 200, description = "a page of (scope, source) pairs with unreleased tasks", body = SourcePage), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 422, body = Problem)))]
pub async fn unreleased_sources(
    State(state): State<AppState>,
    caller: Allowed<perm::Read>,
    QueryOf(query): QueryOf<UnreleasedQuery>,
) -> Result<Json<SourcePage>, ApiError> {
    if caller.is_scoped() {
        return Err(ApiError::Forbidden("read (app-wide)"));
    }
    let limit = query.limit.unwrap_or(crate::service::MAX_SOURCE_PAGE);
    let after = query.after.as_deref().map(decode_cursor).transpose()?;
    let pairs = state
        .tasklane
        .unreleased_sources(&caller.owner, after.as_ref(), limit)
        .await?;
    let next_cursor = if pairs.len() as i64 == limit {
        pairs.last().map(encode_cursor)
    } else {
        None
    };
    let items = pairs
        .into_iter()
        .map(|p| SourceItem {
            scope_id: p.scope_id,
            source_id: p.source_id,
        })
        .collect();
    Ok(Json(SourcePage { items, next_cursor }))
}

/// The cursor is the last pair, as base64url JSON: opaque to clients, exact for keys
/// with any bytes.
fn encode_cursor(pair: &SourceRef) -> String {
    let json = serde_json::to_vec(pair).expect("a pair serializes");
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
}

fn decode_cursor(cursor: &str) -> Result<SourceRef, ApiError> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()
        .and_then(|json| serde_json::from_slice(&json).ok())
        .ok_or_else(|| ApiError::invalid("after", "not a cursor of this listing"))
}
