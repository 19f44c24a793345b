//! Every error the HTTP layer answers with, and the one place they become
//! `application/problem+json` (RFC 9457) with a stable `code`. A 5xx is logged here, with
//! its context, and answered without internals.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::service::ServiceError;
use crate::task::bounds::Invalid;

/// What went wrong with a request.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("the request body is not valid JSON: {0}")]
    MalformedJson(String),
    #[error("{0}")]
    BadRequest(String),
    #[error("the id {0:?} is not a UUID")]
    InvalidId(String),
    #[error("a valid bearer token is required")]
    Unauthorized,
    #[error("the token lacks the {0:?} permission")]
    Forbidden(&'static str),
    #[error("a scope token may act on its own scope only")]
    OtherScope,
    #[error("no such task")]
    NotFound,
    /// Something other than a task was not found; the detail says what.
    #[error("{0}")]
    Missing(String),
    #[error("the endpoint is disabled (its receiver answered 410); PUT it again first")]
    EndpointDisabled,
    /// Nothing is served at this path (wire code `no_route`).
    #[error("no such route")]
    UnknownPath,
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error("the effect key is already used by a different request")]
    IdempotencyConflict,
    #[error("a concurrent change to this identity interfered; submit again")]
    Raced,
    #[error("only failed or cancelled tasks can be retried")]
    NotRetryable,
    #[error("the lease was lost")]
    LeaseLost,
    #[error("{0}")]
    IllegalReport(String),
    #[error("the task is gone")]
    TaskGone,
    #[error("the scope was deleted and is fenced")]
    ScopeDeleted,
    /// Admission refused: 429 (capacity, rate, budget) or 503 (emergency stop), with an
    /// honest `Retry-After`.
    #[error("refused by admission: {0}")]
    Refused(crate::admission::Refusal),
    /// Over the body limit of the route, in bytes when known: the limit layer of each
    /// route group restates an extractor's 413 with its own limit (see `http::limited`),
    /// so a client learns what to send without reading the server's configuration.
    #[error("the request body is larger than the limit{}", limit_text(*.0))]
    TooLarge(Option<usize>),
    #[error("unknown field {0:?}")]
    UnknownField(String),
    /// A query parameter the route does not declare.
    #[error("unknown query parameter {0:?}")]
    UnknownParameter(String),
    #[error("{0}")]
    Validation(Invalid),
    /// A worker's result that does not match its task type's output schema.
    #[error("{0}")]
    InvalidOutput(String),
    #[error("unknown task type {0:?}")]
    UnknownTaskType(String),
    /// Why this replica cannot serve now.
    #[error("not ready: {0}")]
    NotReady(String),
    /// The database could not be reached, or was not taking writes, for longer than the
    /// operation waits (the cause is logged, not answered: it names hosts).
    #[error("the database is unavailable; ask again shortly")]
    DatabaseUnavailable,
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

/// Every `code` an error answer can carry, as [`ApiError::status_and_code`] maps them
/// (admission's refusals included). The documentation's error table is checked against
/// it, and a unit test checks it against every variant.
pub const CODES: [&str; 28] = [
    "malformed_json",
    "bad_request",
    "invalid_id",
    "unauthorized",
    "forbidden",
    "not_found",
    "endpoint_disabled",
    "no_route",
    "method_not_allowed",
    "idempotency_conflict",
    "concurrent_change",
    "not_retryable",
    "lease_lost",
    "illegal_transition",
    "task_gone",
    "scope_deleted",
    "emergency_stop",
    "capacity_exhausted",
    "rate_limited",
    "budget_exhausted",
    "payload_too_large",
    "unknown_field",
    "validation_failed",
    "invalid_output",
    "unknown_task_type",
    "not_ready",
    "database_unavailable",
    "internal",
];

/// The problem+json body.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(examples(json!({"type": "about:blank", "title": "Conflict", "status": 409,
    "detail": "the effect key is already used by a different request",
    "code": "idempotency_conflict"})))]
pub struct Problem {
    /// Always `about:blank` with a `code`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub title: &'static str,
    pub status: u16,
    pub detail: String,
    /// The stable machine-readable code.
    pub code: &'static str,
    /// For validation errors: the offending field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

fn limit_text(limit: Option<usize>) -> String {
    limit
        .map(|bytes| format!(" of {bytes} bytes"))
        .unwrap_or_default()
}

impl ApiError {
    /// The status and stable code of each error.
    pub fn status_and_code(&self) -> (StatusCode, &'static str) {
        use ApiError::*;
        match self {
            MalformedJson(_) => (StatusCode::BAD_REQUEST, "malformed_json"),
            BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            InvalidId(_) => (StatusCode::BAD_REQUEST, "invalid_id"),
            Unauthorized => (StatusCode::UNAUTHORIZED, "unauthorized"),
            Forbidden(_) | OtherScope => (StatusCode::FORBIDDEN, "forbidden"),
            NotFound | Missing(_) => (StatusCode::NOT_FOUND, "not_found"),
            EndpointDisabled => (StatusCode::CONFLICT, "endpoint_disabled"),
            UnknownPath => (StatusCode::NOT_FOUND, "no_route"),
            MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
            IdempotencyConflict => (StatusCode::CONFLICT, "idempotency_conflict"),
            Raced => (StatusCode::CONFLICT, "concurrent_change"),
            NotRetryable => (StatusCode::CONFLICT, "not_retryable"),
            LeaseLost => (StatusCode::CONFLICT, "lease_lost"),
            IllegalReport(_) => (StatusCode::CONFLICT, "illegal_transition"),
            TaskGone => (StatusCode::GONE, "task_gone"),
            ScopeDeleted => (StatusCode::GONE, "scope_deleted"),
            Refused(refusal) => (
                StatusCode::from_u16(refusal.code.http_status())
                    .unwrap_or(StatusCode::TOO_MANY_REQUESTS),
                refusal.code.as_str(),
            ),
            TooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
            UnknownField(_) | UnknownParameter(_) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "unknown_field")
            }
            Validation(_) => (StatusCode::UNPROCESSABLE_ENTITY, "validation_failed"),
            InvalidOutput(_) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_output"),
            UnknownTaskType(_) => (StatusCode::UNPROCESSABLE_ENTITY, "unknown_task_type"),
            NotReady(_) => (StatusCode::SERVICE_UNAVAILABLE, "not_ready"),
            DatabaseUnavailable => (StatusCode::SERVICE_UNAVAILABLE, "database_unavailable"),
            Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        }
    }

    /// A 422 naming `field`.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError::Validation(Invalid::new(field, message))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        let detail = match &self {
            ApiError::Internal(error) => {
                tracing::error!(error = %format!("{error:#}"), "internal error answering a request");
                "internal error".to_owned()
            }
            other => other.to_string(),
        };
        let field = match &self {
            ApiError::Validation(invalid) => Some(invalid.field.clone()),
            ApiError::UnknownField(field) | ApiError::UnknownParameter(field) => {
                Some(field.clone())
            }
            _ => None,
        };
        let problem = Problem {
            kind: "about:blank",
            title: status.canonical_reason().unwrap_or("error"),
            status: status.as_u16(),
            detail,
            code,
            field,
        };
        let mut response = (status, axum::Json(problem)).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let ApiError::Refused(refusal) = &self {
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(refusal.retry_after_seconds()),
            );
        } else if status == StatusCode::SERVICE_UNAVAILABLE {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}

impl From<ServiceError> for ApiError {
    fn from(error: ServiceError) -> Self {
        match error {
            ServiceError::NotFound => ApiError::NotFound,
            ServiceError::OtherScope => ApiError::OtherScope,
            ServiceError::UnknownTaskType(name) => ApiError::UnknownTaskType(name),
            error @ ServiceError::UnknownCircuit(_) => ApiError::Missing(error.to_string()),
            ServiceError::Invalid(invalid) => ApiError::Validation(invalid),
            ServiceError::IdempotencyConflict => ApiError::IdempotencyConflict,
            ServiceError::Raced => ApiError::Raced,
            ServiceError::ScopeDeleted => ApiError::ScopeDeleted,
            ServiceError::Refused(refusal) => ApiError::Refused(refusal),
            ServiceError::NotRetryable => ApiError::NotRetryable,
            ServiceError::LeaseLost => ApiError::LeaseLost,
            ServiceError::TaskGone => ApiError::TaskGone,
            ServiceError::WebhookNotFound => ApiError::Missing("no such webhook endpoint".into()),
            ServiceError::DeliveryNotFound => ApiError::Missing("no such delivery".into()),
            ServiceError::EndpointDisabled => ApiError::EndpointDisabled,
            ServiceError::InvalidOutput(message) => ApiError::InvalidOutput(message),
            ServiceError::Illegal(illegal) => ApiError::IllegalReport(illegal.to_string()),
            error if error.is_unavailable() => {
                crate::telemetry::outage::failed("answer a request", &error, error.sqlstate());
                ApiError::DatabaseUnavailable
            }
            error
            @ (ServiceError::Pool(_) | ServiceError::Unreachable(_) | ServiceError::Db(_)) => {
                ApiError::Internal(anyhow::Error::new(error))
            }
        }
    }
}

/// Gives responses that are not problem+json already (a 413 from the body-limit layer,
/// axum's own rejections) the problem+json shape, so every error reads the same.
pub async fn normalize(response: Response) -> Response {
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let is_problem = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/problem+json"));
    if is_problem {
        return response;
    }
    match status {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::TooLarge(None).into_response(),
        StatusCode::METHOD_NOT_ALLOWED => {
            let mut problem = ApiError::MethodNotAllowed.into_response();
            if let Some(allow) = response.headers().get(header::ALLOW) {
                problem.headers_mut().insert(header::ALLOW, allow.clone());
            }
            problem
        }
        StatusCode::NOT_FOUND => ApiError::UnknownPath.into_response(),
        status if status.is_server_error() => {
            ApiError::Internal(anyhow::anyhow!("unhandled {status}")).into_response()
        }
        _ => ApiError::BadRequest(
            status
                .canonical_reason()
                .unwrap_or("bad request")
                .to_owned(),
        )
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::{Refusal, RefusalCode};

    /// One error of every variant (and every refusal): their codes are exactly
    /// [`CODES`], so the list names no code the server never sends and misses none of
    /// these (a new variant belongs here too).
    #[test]
    fn codes_lists_every_code_an_error_can_carry() {
        let refusal = |code| {
            ApiError::Refused(Refusal {
                code,
                retry_after: std::time::Duration::from_secs(1),
                limit_id: None,
            })
        };
        let errors = [
            ApiError::MalformedJson(String::new()),
            ApiError::BadRequest(String::new()),
            ApiError::InvalidId(String::new()),
            ApiError::Unauthorized,
            ApiError::Forbidden("read"),
            ApiError::OtherScope,
            ApiError::NotFound,
            ApiError::Missing(String::new()),
            ApiError::EndpointDisabled,
            ApiError::UnknownPath,
            ApiError::MethodNotAllowed,
            ApiError::IdempotencyConflict,
            ApiError::Raced,
            ApiError::NotRetryable,
            ApiError::LeaseLost,
            ApiError::IllegalReport(String::new()),
            ApiError::TaskGone,
            ApiError::ScopeDeleted,
            refusal(RefusalCode::EmergencyStop),
            refusal(RefusalCode::CapacityExhausted),
            refusal(RefusalCode::RateLimited),
            refusal(RefusalCode::BudgetExhausted),
            ApiError::TooLarge(None),
            ApiError::UnknownField(String::new()),
            ApiError::UnknownParameter(String::new()),
            ApiError::invalid("f", "m"),
            ApiError::InvalidOutput(String::new()),
            ApiError::UnknownTaskType(String::new()),
            ApiError::NotReady(String::new()),
            ApiError::DatabaseUnavailable,
            ApiError::Internal(anyhow::anyhow!("x")),
        ];
        let mut codes: Vec<&str> = errors.iter().map(|e| e.status_and_code().1).collect();
        codes.sort_unstable();
        codes.dedup();
        let mut listed = CODES.to_vec();
        listed.sort_unstable();
        assert_eq!(codes, listed);
    }

    #[test]
    fn a_413_states_its_limit_when_known() {
        assert_eq!(
            ApiError::TooLarge(Some(16384)).to_string(),
            "the request body is larger than the limit of 16384 bytes"
        );
        assert_eq!(
            ApiError::TooLarge(None).to_string(),
            "the request body is larger than the limit"
        );
    }
}
