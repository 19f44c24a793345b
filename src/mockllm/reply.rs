//! One scripted answer of the mock: after a latency, a completion with usage (and a
//! `finish_reason`, `stop` unless scripted otherwise), a status with an OpenAI-style
//! error body and headers, or a body that is not JSON. A completion names the model
//! that answered as a provider does, a dated snapshot of the one asked for
//! ([`answered_by`]), and the [`SYSTEM_FINGERPRINT`]. A completion asked for with
//! `"stream": true` is streamed as Server-Sent Events (`chat.completion.chunk`s, the
//! usage in a last chunk when `stream_options.include_usage` asks, then
//! `data: [DONE]`): in one content chunk, or as scripted with [`Reply::chunks`]; a
//! reply marked [`Reply::plain`] answers one JSON body all the same, as a provider that
//! does not stream does. A reply marked [`Reply::following_schema`] answers a request
//! for structured output with JSON that matches the schema the request carries.

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

/// Digits of a [`Reply::stamped`] chunk's time.
pub const STAMP_DIGITS: usize = 16;
/// What a stamped chunk carries until it is written (replaced then by the time).
pub(super) const STAMP: &str = "@@@@stamp@@@@@@@";

/// What one call gets.
#[derive(Debug, Clone)]
pub struct Reply {
    /// How long the mock waits before answering.
    pub latency: Duration,
    kind: Kind,
    headers: Vec<(String, String)>,
    /// Content chunks of a streamed completion, and the pause before each after the
    /// first.
    chunks: usize,
    every: Duration,
    /// Answer a stream request with one JSON body.
    plain: bool,
    /// Answer a request for structured output with JSON its schema accepts.
    follows_schema: bool,
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

    /// The same completion streamed (when the request asks for a stream) as `n`
    /// content chunks, `every` apart.
    pub fn chunks(mut self, n: usize, every: Duration) -> Reply {
        self.chunks = n.max(1);
        self.every = every;
        self
    }

    /// A completion of `n` chunks `every` apart, each chunk's content the wall-clock
    /// time it is written at ([`STAMP_DIGITS`] digits of microseconds since the Unix
    /// epoch, then `;`): what a latency benchmark needs to time each chunk to its
    /// observer.
    pub fn stamped(n: usize, every: Duration) -> Reply {
        let content = format!("{STAMP};").repeat(n.max(1));
        Reply::completion(&content, 10, n as i64).chunks(n, every)
    }

    /// The same reply as one JSON body even when the request asks for a stream.
    pub fn plain(mut self) -> Reply {
        self.plain = true;
        self
    }

    /// The same completion answering a request that asks for structured output
    /// (`response_format.json_schema.schema`) with the smallest JSON that schema accepts
    /// instead of its text, as a model in strict mode would; other requests get the text.
    pub fn following_schema(mut self) -> Reply {
        self.follows_schema = true;
        self
    }

    /// This reply as it answers `request`.
    pub(super) fn for_request(mut self, request: &serde_json::Value) -> Reply {
        let schema = request.pointer("/response_format/json_schema/schema");
        if let (true, Kind::Completion { content, .. }, Some(schema)) =
            (self.follows_schema, &mut self.kind, schema)
        {
            *content = super::instance::instance(schema).to_string();
        }
        self
    }

    fn of(kind: Kind) -> Reply {
        Reply {
            latency: Duration::ZERO,
            kind,
            headers: Vec::new(),
            chunks: 1,
            every: Duration::ZERO,
            plain: false,
            follows_schema: false,
        }
    }

    /// The events of this reply streamed, with the pause before each, when `request`
    /// asks for a stream and this is a completion that streams.
    pub(super) fn stream(
        &self,
        model: &str,
        request: &serde_json::Value,
    ) -> Option<Vec<(Duration, String)>> {
        let Kind::Completion {
            content,
            usage,
            finish_reason,
        } = &self.kind
        else {
            return None;
        };
        if self.plain || request.get("stream") != Some(&serde_json::Value::Bool(true)) {
            return None;
        }
        let id = format!("chatcmpl-{}", uuid::Uuid::new_v4().simple());
        let created = chrono::Utc::now().timestamp();
        let chunk = |choices: serde_json::Value, usage: Option<serde_json::Value>| {
            let mut body = serde_json::json!({
                "id": id, "object": "chat.completion.chunk", "created": created,
                "model": answered_by(model), "system_fingerprint": SYSTEM_FINGERPRINT,
                "choices": choices,
            });
            if let Some(usage) = usage {
                body["usage"] = usage;
            }
            format!("data: {body}\n\n")
        };
        let chars: Vec<char> = content.chars().collect();
        let n = self.chunks.min(chars.len().max(1));
        let mut events = Vec::with_capacity(n + 3);
        for i in 0..n {
            let piece: String = chars[i * chars.len() / n..(i + 1) * chars.len() / n]
                .iter()
                .collect();
            let mut delta = serde_json::json!({"content": piece});
            if i == 0 {
                delta["role"] = "assistant".into();
            }
            let pause = if i == 0 { Duration::ZERO } else { self.every };
            let choices = serde_json::json!([{"index": 0, "delta": delta, "finish_reason": null}]);
            events.push((pause, chunk(choices, None)));
        }
        let end = serde_json::json!([{"index": 0, "delta": {}, "finish_reason": finish_reason}]);
        events.push((Duration::ZERO, chunk(end, None)));
        if request.pointer("/stream_options/include_usage") == Some(&serde_json::Value::Bool(true))
        {
            let usage = serde_json::json!({
                "prompt_tokens": usage.0,
                "completion_tokens": usage.1,
                "total_tokens": usage.0 + usage.1,
                "prompt_tokens_details": {"cached_tokens": usage.0 / 2},
            });
            events.push((Duration::ZERO, chunk(serde_json::json!([]), Some(usage))));
        }
        events.push((Duration::ZERO, "data: [DONE]\n\n".to_owned()));
        Some(events)
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
