//! One scripted answer of the mock: after a latency, a completion with usage (and a
//! `finish_reason`, `stop` unless scripted otherwise), a status with an OpenAI-style
//! error body and headers, or a body that is not JSON. A completion names the model
//! that answered as a provider does, a dated snapshot of the one asked for
//! ([`answered_by`]), and the [`SYSTEM_FINGERPRINT`].

use std::time::Duration;

use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse as _, Response};

/// The `system_fingerprint` of every completion.
pub const SYSTEM_FINGERPRINT: &str = "fp_mockllm";

/// The `model` a completion says answered a call to `model`: its snapshot of
/// 2026-01-01, as OpenAI answers `gpt-4o` with `gpt-4o-2024-08-06`.
pub fn answered_by(model: &str) -> String {
    format!("{model}-2026-01-01")
}

/// What one call gets.
#[derive(Debug, Clone)]
pub struct Reply {
    /// How long the mock waits before answering.
    pub latency: Duration,
    kind: Kind,
    headers: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
enum Kind {
    Completion {
        content: String,
        usage: (i64, i64),
        finish_reason: String,
    },
    Status {
        status: u16,
        body: String,
    },
    Malformed,
}

impl Reply {
    /// 200 with a completion (`"content": "ok"`) and usage 10 in, 5 out.
    pub fn ok() -> Reply {
        Reply::completion("ok", 10, 5)
    }

    /// 200 with `content` and usage `input` / `output` tokens (cached: half the input).
    pub fn completion(content: &str, input: i64, output: i64) -> Reply {
        Reply::of(Kind::Completion {
            content: content.to_owned(),
            usage: (input, output),
            finish_reason: "stop".to_owned(),
        })
    }

    /// `status` with an OpenAI-style error body `{"error":{"message","code"}}`.
    pub fn status(status: u16, message: &str, code: Option<&str>) -> Reply {
        let body = serde_json::json!({
            "error": {"message": message, "type": "mock_error", "code": code}
        });
        Reply::of(Kind::Status {
            status,
            body: body.to_string(),
        })
    }

    /// `status` with `body` as it is.
    pub fn raw(status: u16, body: &str) -> Reply {
        Reply::of(Kind::Status {
            status,
            body: body.to_owned(),
        })
    }

    /// 429 with `Retry-After: secs`.
    pub fn rate_limited(secs: u64) -> Reply {
        Reply::status(429, "Rate limit reached", Some("rate_limit_exceeded"))
            .header("retry-after", &secs.to_string())
    }

    /// 429 `insufficient_quota`, as OpenAI answers when the account is out of credit.
    pub fn quota() -> Reply {
        Reply::status(
            429,
            "You exceeded your current quota, please check your plan and billing details.",
            Some("insufficient_quota"),
        )
    }

    /// 200 with a body that is not JSON.
    pub fn malformed() -> Reply {
        Reply::of(Kind::Malformed)
    }

    /// The same completion ending with `finish_reason` (`length`: cut at `max_tokens`);
    /// other replies are left as they are.
    pub fn finish(mut self, reason: &str) -> Reply {
        if let Kind::Completion { finish_reason, .. } = &mut self.kind {
            *finish_reason = reason.to_owned();
        }
        self
    }

    /// The same reply after `latency`.
    pub fn after(mut self, latency: Duration) -> Reply {
        self.latency = latency;
        self
    }

    /// The same reply with one more response header.
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    fn of(kind: Kind) -> Reply {
        Reply {
            latency: Duration::ZERO,
            kind,
            headers: Vec::new(),
        }
    }

    pub(super) fn respond(&self, model: &str, _request: &serde_json::Value) -> Response {
        let mut response = match &self.kind {
            Kind::Completion {
                content,
                usage,
                finish_reason,
            } => axum::Json(serde_json::json!({
                "id": format!("chatcmpl-{}", uuid::Uuid::new_v4().simple()),
                "object": "chat.completion",
                "created": chrono::Utc::now().timestamp(),
                "model": answered_by(model),
                "system_fingerprint": SYSTEM_FINGERPRINT,
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": finish_reason,
                }],
                "usage": {
                    "prompt_tokens": usage.0,
                    "completion_tokens": usage.1,
                    "total_tokens": usage.0 + usage.1,
                    "prompt_tokens_details": {"cached_tokens": usage.0 / 2},
                },
            }))
            .into_response(),
            Kind::Status { status, body } => (
                StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                [("content-type", "application/json")],
                body.clone(),
            )
                .into_response(),
            Kind::Malformed => (
                StatusCode::OK,
                [("content-type", "application/json")],
                "{\"choices\": [ this is not json",
            )
                .into_response(),
        };
        for (name, value) in &self.headers {
            if let (Ok(name), Ok(value)) = (
                HeaderName::try_from(name.as_str()),
                HeaderValue::try_from(value.as_str()),
            ) {
                response.headers_mut().insert(name, value);
            }
        }
        response
    }
}
