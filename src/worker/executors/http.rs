//! The `http` executor: POSTs a task's input to one upstream URL and keeps its JSON
//! answer (408, 429, 5xx, timeouts and connection errors retryable; other 4xx
//! permanent). The `openai` executor (routes, keys, usage) supersedes it for models.

use tracing::Instrument as _;

use crate::service::Success;
use crate::task::attempt::{Facts, Provenance, Usage};
use crate::task::{Locality, TaskType};
use crate::telemetry::GenAiCall;

use super::super::handler::{Handler, HandlerError, TaskContext};
use super::client::ClientOptions;
use std::time::Duration;

/// POSTs the task's input to an upstream and returns its JSON answer. 408, 429, 5xx,
/// timeouts and connection errors are retryable; any other 4xx is permanent.
pub struct Http {
    client: reqwest::Client,
    url: String,
    locality: Locality,
}

impl Http {
    pub fn new(task_type: &TaskType, options: &ClientOptions) -> anyhow::Result<Self> {
        let url = task_type
            .url
            .clone()
            .ok_or_else(|| anyhow::anyhow!("the http executor needs a url"))?;
        let client = options
            .builder()?
            .timeout(task_type.attempt_timeout())
            .build()?;
        Ok(Http {
            client,
            url,
            locality: task_type.locality,
        })
    }
}

#[async_trait::async_trait]
impl Handler for Http {
    /// One upstream call in a `tasklane.upstream` span, recorded in the GenAI client
    /// instruments (provider: the upstream's host; model: what the answer names).
    async fn run(&self, ctx: TaskContext) -> Result<Success, HandlerError> {
        let host = reqwest::Url::parse(&self.url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default();
        let span = tracing::info_span!("tasklane.upstream", server.address = %host);
        let started = std::time::Instant::now();
        let result = self.call(&ctx).instrument(span).await;
        let (model, input_tokens, output_tokens) = match &result {
            Ok(success) => (
                success
                    .facts
                    .provenance
                    .as_ref()
                    .map(|p| p.model.clone())
                    .unwrap_or_default(),
                usage(&success.result, "prompt_tokens"),
                usage(&success.result, "completion_tokens"),
            ),
            Err(_) => (String::new(), None, None),
        };
        let error_type = match &result {
            Err(HandlerError::Retryable { code, .. } | HandlerError::Permanent { code, .. }) => {
                Some(code.as_str())
            }
            Err(HandlerError::Cancelled) => Some("cancelled"),
            Err(HandlerError::Fallback { .. }) => Some("fallback"),
            Err(HandlerError::Deferred { .. }) => Some("deferred"),
            Ok(_) => None,
        };
        ctx.tasklane.instruments().genai_call(&GenAiCall {
            operation: "chat",
            provider: &host,
            model: &model,
            seconds: started.elapsed().as_secs_f64(),
            input_tokens,
            output_tokens,
            error_type,
        });
        result
    }
}

/// A token count of an OpenAI-style `usage` object.
fn usage(result: &serde_json::Value, field: &str) -> Option<u64> {
    result.get("usage")?.get(field)?.as_u64()
}

impl Http {
    async fn call(&self, ctx: &TaskContext) -> Result<Success, HandlerError> {
        let request = self.client.post(&self.url).json(ctx.input()).send();
        let response = tokio::select! {
            response = request => response,
            _ = ctx.cancelled() => return Err(HandlerError::Cancelled),
        };
        // `without_url`: the upstream's URL may carry a key, and the message is stored.
        let response = response.map_err(|e| HandlerError::Retryable {
            code: "upstream_unreachable".into(),
            message: e.without_url().to_string(),
            retry_after: None,
        })?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            .map(Duration::from_secs);
        let body = response
            .bytes()
            .await
            .map_err(|e| HandlerError::retryable(e.without_url().to_string()))?;
        let text = String::from_utf8_lossy(&body);
        if !status.is_success() {
            let code = format!("upstream_{}", status.as_u16());
            let message = text.chars().take(512).collect();
            let retryable =
                status.as_u16() == 408 || status.as_u16() == 429 || status.is_server_error();
            return Err(if retryable {
                HandlerError::Retryable {
                    code,
                    message,
                    retry_after,
                }
            } else {
                HandlerError::Permanent { code, message }
            });
        }
        let result: serde_json::Value = serde_json::from_slice(&body)
            .unwrap_or_else(|_| serde_json::Value::String(text.into_owned()));
        // Usage and provenance go with the attempt, also when the answer names no model.
        let tokens = |field| usage(&result, field).map(|n| n as i64);
        let usage = match (
            tokens("prompt_tokens"),
            tokens("completion_tokens"),
            tokens("total_tokens"),
        ) {
            (None, None, None) => None,
            (input, output, total) => Some(Usage {
                input_tokens: input.unwrap_or(0),
                output_tokens: output.unwrap_or(0),
                total_tokens: total.unwrap_or(input.unwrap_or(0) + output.unwrap_or(0)),
            }),
        };
        let model = result
            .get("model")
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_owned();
        let provider = reqwest::Url::parse(&self.url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default();
        let provenance = Provenance {
            provider,
            model,
            locality: self.locality,
            route_name: String::new(),
            response_model: None,
            system_fingerprint: None,
        };
        Ok(Success {
            result,
            usage_units: None,
            facts: Facts {
                provenance: Some(provenance.bounded()),
                usage,
            },
        })
    }
}
