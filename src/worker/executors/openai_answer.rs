//! How an OpenAI-compatible upstream's answer is read: success, a transient failure
//! (retry, maybe on another route), or a permanent one, exactly as the contract
//! classifies it (text copied from an upstream body made safe to store by
//! `task::redact`). The OpenAI wire format, so it lives with the executor that speaks
//! it; pure: the executor does the I/O.

use std::time::Duration;

use crate::task::attempt::Usage;
use crate::task::codes;
use crate::task::redact::safe_text;

/// The longest `Retry-After` of a model upstream honoured; a longer one is cut to this
/// (a worker's own `retry_after` has the longer `MAX_WORKER_RETRY_AFTER`).
pub const MAX_UPSTREAM_RETRY_AFTER: Duration = Duration::from_secs(120);

/// `error.code` (or `error.type`) values that mean the account's quota or spend limit
/// is used up: no retry helps until someone pays.
const QUOTA_CODES: &[&str] = &[
    "insufficient_quota",
    "quota_exceeded",
    "billing_hard_limit_reached",
    "billing_not_active",
    "spend_limit_reached",
    "insufficient_balance",
    "credit_balance_too_low",
];

/// A successful call's parts: the result as the contract shapes it, and its usage.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub result: serde_json::Value,
    pub usage: Option<Usage>,
    /// The model the upstream says answered (it may differ from the one asked for).
    pub model: Option<String>,
    /// The upstream's `system_fingerprint` (the backend configuration that answered).
    pub system_fingerprint: Option<String>,
}

/// A failed call, as the task records it.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// Another attempt (or another route) may succeed.
    pub transient: bool,
    /// A stable code: `upstream_unavailable`, `upstream_rejected` or
    /// `upstream_quota_exhausted`.
    pub code: &'static str,
    /// Bounded and redacted.
    pub message: String,
    /// When the upstream asked for a pause (transient failures only), capped.
    pub retry_after: Option<Duration>,
    /// What the upstream reported the failed call consumed, if anything.
    pub usage: Option<Usage>,
}

/// Classifies an upstream's HTTP answer. `retry_after` and `retry_after_ms` are the
/// raw header values.
pub fn classify(
    status: u16,
    retry_after: Option<&str>,
    retry_after_ms: Option<&str>,
    body: &[u8],
) -> Result<Completion, Failure> {
    let json: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let usage = json.as_ref().and_then(usage_of);
    if (200..300).contains(&status) {
        return match json.as_ref().and_then(completion_of) {
            Some(completion) => Ok(completion),
            None => Err(Failure {
                transient: true,
                code: codes::UPSTREAM_UNAVAILABLE,
                message: format!(
                    "HTTP {status} with a body that is not a chat completion: {}",
                    safe_text(&String::from_utf8_lossy(body))
                ),
                retry_after: None,
                usage,
            }),
        };
    }
    let detail = json
        .as_ref()
        .and_then(|j| j.pointer("/error/message"))
        .and_then(|m| m.as_str())
        .map(str::to_owned)
        .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
    let message = format!("HTTP {status}: {}", safe_text(&detail));
    let quota = json.as_ref().is_some_and(is_quota);
    let transient = matches!(status, 408 | 409 | 429) || status >= 500;
    let (transient, code) = if quota && (400..500).contains(&status) {
        (false, codes::UPSTREAM_QUOTA_EXHAUSTED)
    } else if transient {
        (true, codes::UPSTREAM_UNAVAILABLE)
    } else {
        (false, codes::UPSTREAM_REJECTED)
    };
    Err(Failure {
        transient,
        code,
        message,
        retry_after: transient
            .then(|| retry_delay(retry_after, retry_after_ms))
            .flatten(),
        usage,
    })
}

/// A connection error or timeout of one call: transient.
pub fn unreachable(message: &str) -> Failure {
    Failure {
        transient: true,
        code: codes::UPSTREAM_UNAVAILABLE,
        message: safe_text(message),
        retry_after: None,
        usage: None,
    }
}

/// `retry-after-ms` (milliseconds) wins over `Retry-After` (seconds); an HTTP date or
/// anything unreadable is ignored (the type's backoff applies); capped at
/// [`MAX_UPSTREAM_RETRY_AFTER`].
pub fn retry_delay(retry_after: Option<&str>, retry_after_ms: Option<&str>) -> Option<Duration> {
    let secs = |v: &str, scale: f64| {
        v.trim()
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n >= 0.0)
            .map(|n| (n / scale).min(MAX_UPSTREAM_RETRY_AFTER.as_secs_f64()))
    };
    retry_after_ms
        .and_then(|v| secs(v, 1000.0))
        .or_else(|| retry_after.and_then(|v| secs(v, 1.0)))
        .map(Duration::from_secs_f64)
}

pub(super) fn is_quota(json: &serde_json::Value) -> bool {
    ["/error/code", "/error/type"].iter().any(|p| {
        json.pointer(p)
            .and_then(|c| c.as_str())
            .is_some_and(|c| QUOTA_CODES.contains(&c))
    })
}

/// OpenAI's `usage`, in the contract's words. `prompt_tokens_details.cached_tokens`
/// is part of `input_tokens` (OpenAI counts it there) and is shown in the result.
pub(super) fn usage_of(json: &serde_json::Value) -> Option<Usage> {
    let usage = json.get("usage")?;
    let n = |k: &str| usage.get(k).and_then(|v| v.as_i64()).filter(|n| *n >= 0);
    let input = n("prompt_tokens");
    let output = n("completion_tokens");
    let total = n("total_tokens");
    if input.is_none() && output.is_none() && total.is_none() {
        return None;
    }
    let (input, output) = (input.unwrap_or(0), output.unwrap_or(0));
    Some(Usage {
        input_tokens: input,
        output_tokens: output,
        total_tokens: total.unwrap_or(input.saturating_add(output)),
    })
}

/// A chat completion body's result, usage and model (`None`: not a chat completion).
pub(super) fn completion_of(json: &serde_json::Value) -> Option<Completion> {
    let choice = json.get("choices")?.get(0)?;
    let message = choice.get("message").filter(|m| m.is_object())?.clone();
    let finish_reason = choice
        .get("finish_reason")
        .cloned()
        .unwrap_or(serde_json::Value::Null);
    let usage = usage_of(json);
    let mut usage_json = serde_json::to_value(usage).ok()?;
    if let Some(cached) = json
        .pointer("/usage/prompt_tokens_details/cached_tokens")
        .and_then(|v| v.as_i64())
    {
        usage_json["cached_input_tokens"] = cached.into();
    }
    Some(Completion {
        result: serde_json::json!({
            "message": message,
            "finish_reason": finish_reason,
            "usage": usage_json,
        }),
        usage,
        model: json
            .get("model")
            .and_then(|m| m.as_str())
            .map(str::to_owned),
        system_fingerprint: json
            .get("system_fingerprint")
            .and_then(|f| f.as_str())
            .map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok_body() -> Vec<u8> {
        serde_json::json!({
            "model": "m-1",
            "system_fingerprint": "fp_1",
            "choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10,
                      "prompt_tokens_details": {"cached_tokens": 4}}
        })
        .to_string()
        .into_bytes()
    }

    fn failure(status: u16, body: &str) -> Failure {
        classify(status, None, None, body.as_bytes()).unwrap_err()
    }

    #[test]
    fn a_2xx_chat_completion_succeeds_with_its_usage() {
        let c = classify(200, None, None, &ok_body()).unwrap();
        assert_eq!(
            c.usage,
            Some(Usage {
                input_tokens: 7,
                output_tokens: 3,
                total_tokens: 10
            })
        );
        assert_eq!(c.result["message"]["content"], "hi");
        assert_eq!(c.result["finish_reason"], "stop");
        assert_eq!(c.result["usage"]["cached_input_tokens"], 4);
        assert_eq!(c.model.as_deref(), Some("m-1"));
        assert_eq!(c.system_fingerprint.as_deref(), Some("fp_1"));
    }

    #[test]
    fn every_classification_row() {
        let transient = |s| {
            let f = failure(s, "{}");
            (f.transient, f.code)
        };
        for status in [408, 409, 429, 500, 502, 503, 599] {
            assert_eq!(
                transient(status),
                (true, "upstream_unavailable"),
                "{status}"
            );
        }
        for status in [400, 401, 403, 404, 422] {
            assert_eq!(transient(status), (false, "upstream_rejected"), "{status}");
        }
        let quota =
            r#"{"error":{"message":"You exceeded your quota","code":"insufficient_quota"}}"#;
        let f = failure(429, quota);
        assert_eq!((f.transient, f.code), (false, "upstream_quota_exhausted"));
        assert_eq!(f.message, "HTTP 429: You exceeded your quota");
        let by_type = r#"{"error":{"type":"insufficient_quota"}}"#;
        assert_eq!(failure(429, by_type).code, "upstream_quota_exhausted");
        let malformed = classify(200, None, None, b"{not json").unwrap_err();
        assert_eq!(
            (malformed.transient, malformed.code),
            (true, "upstream_unavailable")
        );
        let no_choices = classify(200, None, None, br#"{"choices":[]}"#).unwrap_err();
        assert!(no_choices.transient);
    }

    #[test]
    fn failed_answers_keep_their_usage() {
        let body = r#"{"error":{"message":"overloaded"},"usage":{"prompt_tokens":5,"completion_tokens":0,"total_tokens":5}}"#;
        assert_eq!(failure(503, body).usage.unwrap().total_tokens, 5);
    }

    #[test]
    fn retry_after_is_read_and_capped() {
        let f = classify(429, Some("7"), None, b"{}").unwrap_err();
        assert_eq!(f.retry_after, Some(Duration::from_secs(7)));
        let f = classify(503, Some("7"), Some("1500"), b"{}").unwrap_err();
        assert_eq!(f.retry_after, Some(Duration::from_millis(1500)));
        let f = classify(429, Some("100000"), None, b"{}").unwrap_err();
        assert_eq!(f.retry_after, Some(MAX_UPSTREAM_RETRY_AFTER));
        let f = classify(429, Some("Wed, 21 Oct 2015 07:28:00 GMT"), None, b"{}").unwrap_err();
        assert_eq!(f.retry_after, None);
        let f = classify(400, Some("7"), None, b"{}").unwrap_err();
        assert_eq!(f.retry_after, None, "permanent failures have no retry time");
    }

    #[test]
    fn a_key_in_an_error_body_is_redacted() {
        let key = "sk-proj-AbCdEf0123456789";
        let f = failure(
            401,
            &format!(r#"{{"error":{{"message":"bad key {key}"}}}}"#),
        );
        assert!(!f.message.contains(key), "{}", f.message);
    }
}
