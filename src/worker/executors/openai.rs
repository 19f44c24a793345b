//! The `openai` executor: one attempt tries the type's routes of the worker's locality
//! in order (`POST {base_url}/chat/completions` with the route's model), skipping
//! routes whose circuit is open, until one answers. What ends the attempt:
//!
//! - a success, or a permanent answer (quota, another 4xx): at once;
//! - every route failed transiently or was open: on a local attempt of a task whose
//!   snapshot is `external_allowed` (and a type with external routes), a fallback to
//!   the external routes, the attempt keeping why (`[code] message`, naming the
//!   routes);
//! - every route was open (no call made) and no fallback may be taken: the attempt is
//!   deferred. It does not count, and the task waits for the earliest reopening (with
//!   a jitter), up to the type's `circuit_wait_seconds` in a row;
//! - otherwise, on a `local_only` task of a type with external routes, a retry while
//!   attempts remain and `no_fallback_allowed` on the last one; otherwise a retry (the
//!   last failure's code), which the settlement turns into `attempts_exhausted` on the
//!   last attempt.
//!
//! A type with an output schema asks for it (`response_format`, strict); its answer
//! must then be JSON that matches (`task::output`), else the attempt ends `retry` with
//! `invalid_output` (the route answered: its circuit counts a success).
//!
//! Provenance is recorded before each call and usage after each answer that carries it
//! (failed ones too). The API key goes only into the request's `Authorization` header
//! (marked sensitive); error text from upstream bodies is bounded and redacted.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use reqwest::header::HeaderValue;
use tracing::Instrument as _;

use super::openai_answer::{self, Failure};
use crate::admission::RefusalCode;
use crate::service::circuits::{CircuitSpec, Permit};
use crate::service::{ServiceError, Success};
use crate::task::attempt::Provenance;
use crate::task::output;
use crate::task::routes::RouteSpec;
use crate::task::{codes, TaskType};
use crate::telemetry::GenAiCall;

use super::super::handler::{Handler, HandlerError, TaskContext};
use super::api_key::api_key;
use super::call::{describe, Call};
use super::client::ClientOptions;
use super::openai_exhausted::{exhausted, Open};
use super::openai_stream;
use crate::service::live_output::Writer;

/// A route ready to call: its endpoint and its `Authorization` header.
struct Prepared {
    spec: RouteSpec,
    endpoint: String,
    host: String,
    auth: Option<HeaderValue>,
}

/// The `openai` executor of one task type.
pub struct Openai {
    task_type: TaskType,
    routes: Vec<Prepared>,
    client: reqwest::Client,
}

impl Openai {
    /// Prepares the type's routes: reads each API key (refusing a missing variable or
    /// an unreadable file, naming type, route and field) and builds the client.
    pub fn new(task_type: &TaskType, options: &ClientOptions) -> anyhow::Result<Self> {
        let mut routes = Vec::with_capacity(task_type.routes.len());
        for (i, spec) in task_type.routes.iter().enumerate() {
            let auth = api_key(spec)
                .with_context(|| format!("task type {:?}: routes[{i}]", task_type.name))?;
            let host = reqwest::Url::parse(&spec.base_url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_owned))
                .unwrap_or_default();
            routes.push(Prepared {
                endpoint: spec.endpoint(),
                host,
                spec: spec.clone(),
                auth,
            });
        }
        let client = options.builder()?.build()?;
        Ok(Openai {
            task_type: task_type.clone(),
            routes,
            client,
        })
    }
}

/// Time kept back from the attempt timeout so a call that runs out is still recorded
/// (circuit, provenance) before the runner's own timeout drops the attempt.
fn margin(timeout: Duration) -> Duration {
    (timeout / 10).min(Duration::from_secs(1))
}

#[async_trait::async_trait]
impl Handler for Openai {
    async fn run(&self, ctx: TaskContext) -> Result<Success, HandlerError> {
        let timeout = Duration::from_secs(ctx.task.attempt_timeout_seconds.max(1) as u64);
        let deadline = Instant::now() + timeout - margin(timeout);
        let kind = ctx.locality();
        let mut last: Option<Failure> = None;
        let mut reopens: Option<chrono::DateTime<chrono::Utc>> = None;
        let mut open: Vec<&str> = Vec::new();
        let mut tried = 0;
        let mut reserved = false;
        // The attempt's text, published as it arrives to observers of the task.
        let live = ctx
            .tasklane
            .live_output()
            .map(|output| output.open(ctx.task.id, ctx.task.attempt));
        for route in self.routes.iter().filter(|r| r.spec.locality == kind) {
            tried += 1;
            let spec = CircuitSpec {
                route_name: &route.spec.name,
                failures: route.spec.circuit_failures,
                open_seconds: route.spec.circuit_open_seconds,
                probe_seconds: timeout.as_secs() as u32,
            };
            // Once per attempt, before its first call, the budget is reserved with the
            // permit (one round trip): a budget spent since the admission stops the
            // attempt without calling the provider; a skipped route reserves nothing.
            let units = (!reserved).then(|| reservation(ctx.input()));
            let start = ctx.tasklane.start_call(&spec, &ctx.task, units).await;
            let permit = start.permit;
            if let Permit::Open { retry_at } = permit {
                // While another caller holds the probe, retry_at is the end of its
                // lease (up to the attempt timeout): its answer comes much sooner, so
                // wait at most one open period.
                let period = chrono::Duration::seconds(i64::from(spec.open_seconds));
                let retry_at = retry_at.min(chrono::Utc::now() + period);
                reopens = Some(reopens.map_or(retry_at, |r| r.min(retry_at)));
                open.push(&route.spec.name);
                continue;
            }
            if let Some(answer) = start.reservation {
                reserved_or_stop(answer)?;
                reserved = true;
            }
            ctx.set_provenance(Provenance {
                provider: route.spec.provider.clone(),
                model: route.spec.model.clone(),
                locality: route.spec.locality,
                route_name: route.spec.name.clone(),
                response_model: None,
                system_fingerprint: None,
            });
            let call = self.call(&ctx, route, deadline, live.as_ref()).await;
            let transient = match &call {
                Call::Cancelled => return Err(HandlerError::Cancelled),
                Call::TimedOut => true,
                Call::Answered(Ok(_)) => false,
                Call::Answered(Err(failure)) => failure.transient,
            };
            ctx.tasklane.circuit_record(&spec, permit, transient).await;
            match call {
                Call::Cancelled => unreachable!("returned above"),
                Call::TimedOut => {
                    return Err(HandlerError::Retryable {
                        code: codes::ATTEMPT_TIMEOUT.into(),
                        message: format!(
                            "the attempt ran past its timeout calling route {:?}",
                            route.spec.name
                        ),
                        retry_after: None,
                    })
                }
                Call::Answered(Ok(completion)) => {
                    if let Some(usage) = completion.usage {
                        ctx.add_usage(usage);
                    }
                    ctx.set_answered_by(completion.model, completion.system_fingerprint);
                    // Provenance and usage (this call's and any earlier failed call's
                    // of the attempt) are on the context; the runner writes them, so an
                    // answer refused here is charged all the same.
                    let result = self.structured(&route.spec, completion.result)?;
                    // Its last text reaches observers before the result is written.
                    if let Some(live) = live {
                        live.finish().await;
                    }
                    return Ok(Success {
                        result,
                        usage_units: None,
                        facts: Default::default(),
                    });
                }
                Call::Answered(Err(failure)) => {
                    if let Some(usage) = failure.usage {
                        ctx.add_usage(usage);
                    }
                    if !failure.transient {
                        return Err(HandlerError::Permanent {
                            code: failure.code.into(),
                            message: route_message(&route.spec, &failure.message),
                        });
                    }
                    last = Some(Failure {
                        message: route_message(&route.spec, &failure.message),
                        ..failure
                    });
                }
            }
        }
        Err(exhausted(
            &self.task_type,
            &ctx,
            kind,
            tried,
            last,
            Open {
                routes: open,
                reopens,
            },
        ))
    }
}

/// What an attempt reserves of its budget: the request's `max_tokens` (or
/// `max_completion_tokens`); none named, nothing (the check still refuses a budget
/// that is already spent).
fn reservation(input: &serde_json::Value) -> i64 {
    ["max_tokens", "max_completion_tokens"]
        .iter()
        .find_map(|k| input.get(k).and_then(|v| v.as_i64()))
        .unwrap_or(0)
        .max(0)
}

fn route_message(spec: &RouteSpec, message: &str) -> String {
    format!("route {:?}: {message}", spec.name)
}

/// The budget's answer at a call's start (`Tasklane::start_call`): a spent budget fails
/// the task `budget_exhausted` without a call.
fn reserved_or_stop(answer: Result<(), ServiceError>) -> Result<(), HandlerError> {
    match answer {
        Ok(()) => Ok(()),
        Err(ServiceError::Refused(refusal)) if refusal.code == RefusalCode::BudgetExhausted => {
            Err(HandlerError::Permanent {
                code: codes::BUDGET_EXHAUSTED.into(),
                message: "the budget that pays for this task is spent".into(),
            })
        }
        // A lost lease is seen by the runner too; a database error: try again.
        Err(error) => Err(HandlerError::Retryable {
            code: "budget_check_failed".into(),
            message: format!("the budget could not be checked: {error}"),
            retry_after: None,
        }),
    }
}

impl Openai {
    /// The result of an answer: as it came without an output schema; with one, checked
    /// and carrying the parsed value as `output`, or `invalid_output` (retried; the
    /// settlement fails the last attempt with it).
    fn structured(
        &self,
        spec: &RouteSpec,
        result: serde_json::Value,
    ) -> Result<serde_json::Value, HandlerError> {
        let Some(schema) = &self.task_type.output_schema else {
            return Ok(result);
        };
        output::completion_output(schema, result).map_err(|invalid| HandlerError::Retryable {
            code: codes::INVALID_OUTPUT.into(),
            message: route_message(spec, &invalid.0),
            retry_after: None,
        })
    }

    /// One call to `route`, aborted (the connection dropped) when cancellation is
    /// requested, and bounded by the attempt's `deadline`.
    async fn call(
        &self,
        ctx: &TaskContext,
        route: &Prepared,
        deadline: Instant,
        live: Option<&Writer>,
    ) -> Call {
        let Some(remaining) = deadline.checked_duration_since(Instant::now()) else {
            return Call::TimedOut;
        };
        let span = tracing::info_span!(
            "tasklane.upstream",
            server.address = %route.host,
            route_name = %route.spec.name,
            gen_ai.request.model = %route.spec.model,
        );
        let started = Instant::now();
        let request = self.request(ctx, route, remaining, live);
        let call = tokio::select! {
            call = request.instrument(span) => call,
            _ = ctx.cancelled() => Call::Cancelled,
        };
        let (input_tokens, output_tokens) = match &call {
            Call::Answered(Ok(openai_answer::Completion { usage: Some(u), .. }))
            | Call::Answered(Err(Failure { usage: Some(u), .. })) => (
                Some(u.input_tokens.max(0) as u64),
                Some(u.output_tokens.max(0) as u64),
            ),
            _ => (None, None),
        };
        let error_type = match &call {
            Call::Answered(Ok(_)) => None,
            Call::Answered(Err(failure)) => Some(failure.code),
            Call::TimedOut => Some("timeout"),
            Call::Cancelled => Some("cancelled"),
        };
        ctx.tasklane.instruments().genai_call(&GenAiCall {
            operation: "chat",
            provider: &route.spec.provider,
            model: &route.spec.model,
            seconds: started.elapsed().as_secs_f64(),
            input_tokens,
            output_tokens,
            error_type,
        });
        call
    }

    async fn request(
        &self,
        ctx: &TaskContext,
        route: &Prepared,
        timeout: Duration,
        live: Option<&Writer>,
    ) -> Call {
        let mut body = ctx.input().as_object().cloned().unwrap_or_default();
        body.insert("model".into(), route.spec.model.clone().into());
        // Streamed, so observers see the text as it comes; with the usage in the last
        // chunk, so it is still recorded per attempt. Submit refuses an input that
        // asks for a stream itself: the executor decides how the answer is read.
        body.insert("stream".into(), true.into());
        body.insert(
            "stream_options".into(),
            serde_json::json!({"include_usage": true}),
        );
        if let Some(schema) = &self.task_type.output_schema {
            // Replaces any the input carried: submit refuses one, but the SQL door does
            // not read inputs.
            let format = schema.response_format(&self.task_type.name);
            body.insert("response_format".into(), format);
        }
        let mut request = self
            .client
            .post(&route.endpoint)
            .timeout(timeout)
            .json(&body);
        if let Some(auth) = &route.auth {
            request = request.header(reqwest::header::AUTHORIZATION, auth.clone());
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) if e.is_timeout() => return Call::TimedOut,
            Err(e) if certificate_refused(&e) => {
                // Another attempt meets the same certificate: permanent, and clear.
                return Call::Answered(Err(Failure {
                    transient: false,
                    code: codes::UPSTREAM_REJECTED,
                    message: crate::task::redact::safe_text(&format!(
                        "TLS: the upstream's certificate is not trusted (add its CA with TASKLANE_CA_FILE): {}",
                        describe(&e)
                    )),
                    retry_after: None,
                    usage: None,
                }));
            }
            Err(e) => return Call::Answered(Err(openai_answer::unreachable(&describe(&e)))),
        };
        let status = response.status().as_u16();
        if response.status().is_success() && openai_stream::is_event_stream(&response) {
            return openai_stream::read(response, live).await;
        }
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let retry_after = header("retry-after");
        let retry_after_ms = header("retry-after-ms");
        let body = match response.bytes().await {
            Ok(body) => body,
            Err(e) if e.is_timeout() => return Call::TimedOut,
            Err(e) => return Call::Answered(Err(openai_answer::unreachable(&describe(&e)))),
        };
        let answer = openai_answer::classify(
            status,
            retry_after.as_deref(),
            retry_after_ms.as_deref(),
            &body,
        );
        // A provider that did not stream gives its whole text as one piece.
        if let (Ok(completion), Some(live)) = (&answer, live) {
            if let Some(text) = completion.result.pointer("/message/content") {
                live.push(text.as_str().unwrap_or_default());
            }
        }
        Call::Answered(answer)
    }
}

/// Whether a connection failed because rustls refused the server's certificate. The
/// rustls error sits inside an `io::Error` inside boxed connector errors, where a
/// downcast does not reach it; its text (`invalid peer certificate: ...`) does.
fn certificate_refused(error: &reqwest::Error) -> bool {
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        if let Some(rustls::Error::InvalidCertificate(_)) = cause.downcast_ref() {
            return true;
        }
        if cause.to_string().contains("invalid peer certificate") {
            return true;
        }
        source = cause.source();
    }
    false
}
