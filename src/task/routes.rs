//! Execution routes of an AI task type (`[[task_type.routes]]`): the ordered list of
//! OpenAI-compatible endpoints the `openai` executor calls, every local route before any
//! external one, and the rules that keep a type's privacy promises. Pure: the checks
//! that need the environment (API keys, the CA file) are the executor's, at start.

use super::bounds::Invalid;
use super::locality::Locality;

/// Default `circuit_failures`: consecutive transient failures that open a circuit.
pub const DEFAULT_CIRCUIT_FAILURES: u32 = 5;
/// Default `circuit_open_seconds`: how long an open circuit skips its route.
pub const DEFAULT_CIRCUIT_OPEN_SECONDS: u32 = 30;
/// Bounds of the two circuit keys.
pub const CIRCUIT_FAILURES: std::ops::RangeInclusive<u32> = 1..=1000;
pub const CIRCUIT_OPEN_SECONDS: std::ops::RangeInclusive<u32> = 1..=86_400;

/// One `[[task_type.routes]]` entry.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    /// Unique across the file; names the route's circuit breaker.
    pub name: String,
    /// `local` or `external` (anything else is refused when the file is read).
    #[serde(rename = "route")]
    pub locality: Locality,
    /// Provider name recorded in provenance (`vllm`, `openai`, `ollama`, ...).
    pub provider: String,
    /// The `model` the route sets in every request.
    pub model: String,
    /// `{base_url}/chat/completions` is called.
    pub base_url: String,
    /// The variable holding the API key (never the key itself).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// A file holding the API key (a mounted secret), read at start.
    #[serde(default)]
    pub api_key_file: Option<std::path::PathBuf>,
    /// A cluster-wide slot pool. Reserved: a task's slot is taken at claim from the
    /// type's `resource`, so this must equal it when both are given.
    #[serde(default)]
    pub resource: Option<String>,
    #[serde(default = "default_circuit_failures")]
    pub circuit_failures: u32,
    #[serde(default = "default_circuit_open_seconds")]
    pub circuit_open_seconds: u32,
}

fn default_circuit_failures() -> u32 {
    DEFAULT_CIRCUIT_FAILURES
}
fn default_circuit_open_seconds() -> u32 {
    DEFAULT_CIRCUIT_OPEN_SECONDS
}

impl RouteSpec {
    /// A route with the defaults, for code that builds types programmatically.
    pub fn new(name: &str, locality: Locality, model: &str, base_url: &str) -> Self {
        RouteSpec {
            name: name.into(),
            locality,
            provider: "openai-compatible".into(),
            model: model.into(),
            base_url: base_url.into(),
            api_key_env: None,
            api_key_file: None,
            resource: None,
            circuit_failures: DEFAULT_CIRCUIT_FAILURES,
            circuit_open_seconds: DEFAULT_CIRCUIT_OPEN_SECONDS,
        }
    }

    /// The URL the executor posts to.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }
}

/// Checks the input of an `openai` task: a Chat Completions body without `model` (the
/// route sets it) and without `stream` (an attempt needs the whole answer).
pub fn validate_openai_input(input: &serde_json::Value) -> Result<(), Invalid> {
    let Some(body) = input.as_object() else {
        return Err(Invalid::new(
            "input",
            "must be a Chat Completions request body (a JSON object)",
        ));
    };
    if body.contains_key("model") {
        return Err(Invalid::new(
            "input.model",
            "must be absent: the route sets the model",
        ));
    }
    if body
        .get("stream")
        .is_some_and(|s| !s.is_null() && s != false)
    {
        return Err(Invalid::new("input.stream", "streaming is not supported"));
    }
    match body.get("messages") {
        Some(serde_json::Value::Array(m)) if !m.is_empty() => Ok(()),
        _ => Err(Invalid::new(
            "input.messages",
            "must be a non-empty array of chat messages",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_input_is_a_chat_body_without_model_or_stream() {
        let ok = serde_json::json!({"messages": [{"role": "user", "content": "hi"}]});
        assert!(validate_openai_input(&ok).is_ok());
        let mut with_false = ok.clone();
        with_false["stream"] = false.into();
        assert!(validate_openai_input(&with_false).is_ok());
        let mut model = ok.clone();
        model["model"] = "x".into();
        assert_eq!(
            validate_openai_input(&model).unwrap_err().field,
            "input.model"
        );
        let mut stream = ok.clone();
        stream["stream"] = true.into();
        assert_eq!(
            validate_openai_input(&stream).unwrap_err().field,
            "input.stream"
        );
        let empty = serde_json::json!({"messages": []});
        assert!(validate_openai_input(&empty).is_err());
        assert!(validate_openai_input(&serde_json::json!([1])).is_err());
    }
}
