//! How a streamed chat completion (`"stream": true`, Server-Sent Events of
//! `chat.completion.chunk`s ending with `data: [DONE]`) is read back into the same
//! completion a plain answer gives: the content deltas joined into the message, the
//! last `finish_reason`, and the usage of the final chunk (`stream_options.include_usage`).
//! Pure: the executor feeds it the bytes as they come and publishes the content
//! deltas it returns.

use super::openai_answer::{self, Completion, Failure};
use crate::task::codes;
use crate::task::redact::safe_text;

/// Splits a byte stream into the `data` of its events (lines of one event joined by
/// `\n`); comments and other fields are skipped.
#[derive(Debug, Default)]
pub struct SseEvents {
    line: Vec<u8>,
    data: Option<String>,
}

impl SseEvents {
    /// The events `bytes` completes.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        for &b in bytes {
            if b != b'\n' {
                self.line.push(b);
                continue;
            }
            let mut line = std::mem::take(&mut self.line);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if line.is_empty() {
                out.extend(self.data.take());
                continue;
            }
            let line = String::from_utf8_lossy(&line);
            if let Some(value) = line.strip_prefix("data:") {
                let value = value.strip_prefix(' ').unwrap_or(value);
                match &mut self.data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(value);
                    }
                    None => self.data = Some(value.to_owned()),
                }
            }
        }
        out
    }

    /// What an unterminated last event held, when the stream ends.
    pub fn finish(&mut self) -> Option<String> {
        if !self.line.is_empty() {
            self.push(b"\n");
        }
        self.data.take()
    }
}

/// A streamed completion as read so far.
#[derive(Debug, Default)]
pub struct StreamedCompletion {
    role: Option<String>,
    content: String,
    finish_reason: Option<serde_json::Value>,
    usage: Option<serde_json::Value>,
    model: Option<String>,
    system_fingerprint: Option<String>,
    done: bool,
}

impl StreamedCompletion {
    /// Reads one event's data: the content it adds (empty for none), or the failure an
    /// error event reports.
    pub fn event(&mut self, data: &str) -> Result<String, Failure> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(String::new());
        }
        let Ok(json) = serde_json::from_str::<serde_json::Value>(data) else {
            return Err(self.failure(format!(
                "a stream event that is not JSON: {}",
                safe_text(data)
            )));
        };
        if let Some(error) = json.get("error") {
            let detail = error
                .get("message")
                .and_then(|m| m.as_str())
                .unwrap_or("an error event");
            let mut failure = self.failure(format!("stream error: {}", safe_text(detail)));
            if openai_answer::is_quota(&json) {
                failure.transient = false;
                failure.code = codes::UPSTREAM_QUOTA_EXHAUSTED;
            }
            return Err(failure);
        }
        if let Some(model) = json.get("model").and_then(|m| m.as_str()) {
            self.model = Some(model.to_owned());
        }
        let fingerprint = json.get("system_fingerprint").and_then(|f| f.as_str());
        if let Some(fingerprint) = fingerprint {
            self.system_fingerprint = Some(fingerprint.to_owned());
        }
        if let Some(usage) = json.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(usage.clone());
        }
        let Some(choice) = json.get("choices").and_then(|c| c.get(0)) else {
            return Ok(String::new());
        };
        if let Some(reason) = choice.get("finish_reason").filter(|r| !r.is_null()) {
            self.finish_reason = Some(reason.clone());
        }
        let delta = choice.get("delta");
        if let Some(role) = delta.and_then(|d| d.get("role")).and_then(|r| r.as_str()) {
            self.role = Some(role.to_owned());
        }
        let text = delta
            .and_then(|d| d.get("content"))
            .and_then(|c| c.as_str())
            .unwrap_or("");
        self.content.push_str(text);
        Ok(text.to_owned())
    }

    /// The completion, once the stream ended: a stream cut before its
    /// `finish_reason` (and without `[DONE]`) is a transient failure.
    pub fn finish(self) -> Result<Completion, Failure> {
        if self.finish_reason.is_none() && !self.done {
            return Err(self.failure("the stream ended before the completion did".into()));
        }
        let body = self.as_body();
        openai_answer::completion_of(&body)
            .ok_or_else(|| self.failure("the stream did not make a chat completion".into()))
    }

    /// The whole stream as the body a plain answer would have had.
    fn as_body(&self) -> serde_json::Value {
        let mut body = serde_json::json!({
            "choices": [{
                "message": {
                    "role": self.role.as_deref().unwrap_or("assistant"),
                    "content": self.content,
                },
                "finish_reason": self.finish_reason.clone().unwrap_or(serde_json::Value::Null),
            }],
        });
        if let Some(model) = &self.model {
            body["model"] = model.clone().into();
        }
        if let Some(fingerprint) = &self.system_fingerprint {
            body["system_fingerprint"] = fingerprint.clone().into();
        }
        if let Some(usage) = &self.usage {
            body["usage"] = usage.clone();
        }
        body
    }

    /// A transient failure keeping the usage reported so far.
    fn failure(&self, message: String) -> Failure {
        let usage = self
            .usage
            .as_ref()
            .and_then(|u| openai_answer::usage_of(&serde_json::json!({ "usage": u })));
        Failure {
            transient: true,
            code: codes::UPSTREAM_UNAVAILABLE,
            message: safe_text(&message),
            retry_after: None,
            usage,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(content: &str) -> String {
        format!(
            "data: {}\n\n",
            serde_json::json!({"model": "m-1", "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null}]})
        )
    }

    #[test]
    fn a_stream_in_any_cut_reads_back_as_the_plain_completion() {
        let mut wire = String::from(": keep-alive\n\n");
        wire.push_str(&format!(
            "data: {}\r\n\r\n",
            serde_json::json!({"choices": [{"delta": {"role": "assistant", "content": ""}}]})
        ));
        wire.push_str(&chunk("hé"));
        wire.push_str(&chunk("llo"));
        wire.push_str(&format!(
            "data: {}\n\n",
            serde_json::json!({"choices": [{"delta": {}, "finish_reason": "stop"}]})
        ));
        wire.push_str(&format!(
            "data: {}\n\ndata: [DONE]\n\n",
            serde_json::json!({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3,
                "total_tokens": 10, "prompt_tokens_details": {"cached_tokens": 4}}})
        ));
        // Cut the bytes everywhere, even inside a multi-byte character.
        for step in [1, 3, 7, wire.len()] {
            let mut events = SseEvents::default();
            let mut stream = StreamedCompletion::default();
            let mut deltas = String::new();
            for piece in wire.as_bytes().chunks(step) {
                for data in events.push(piece) {
                    deltas.push_str(&stream.event(&data).unwrap());
                }
            }
            assert!(events.finish().is_none());
            assert_eq!(deltas, "héllo");
            let c = stream.finish().unwrap();
            assert_eq!(c.result["message"]["content"], "héllo");
            assert_eq!(c.result["message"]["role"], "assistant");
            assert_eq!(c.result["finish_reason"], "stop");
            assert_eq!(c.result["usage"]["total_tokens"], 10);
            assert_eq!(c.result["usage"]["cached_input_tokens"], 4);
            assert_eq!(c.usage.unwrap().input_tokens, 7);
            assert_eq!(c.model.as_deref(), Some("m-1"));
        }
    }

    #[test]
    fn a_cut_stream_or_an_error_event_is_a_failure() {
        let mut stream = StreamedCompletion::default();
        let mut events = SseEvents::default();
        for data in events.push(chunk("partial").as_bytes()) {
            stream.event(&data).unwrap();
        }
        let f = stream.finish().unwrap_err();
        assert!(f.transient);
        assert_eq!(f.code, "upstream_unavailable");
        let mut stream = StreamedCompletion::default();
        let f = stream
            .event(r#"{"error":{"message":"quota","code":"insufficient_quota"}}"#)
            .unwrap_err();
        assert_eq!((f.transient, f.code), (false, "upstream_quota_exhausted"));
        let f = StreamedCompletion::default().event("{nope").unwrap_err();
        assert!(f.transient);
    }
}
