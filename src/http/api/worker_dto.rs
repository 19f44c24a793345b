//! The JSON shapes of the worker protocol. Unknown fields are refused everywhere.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::http::error::ApiError;
use crate::task::attempt::{Facts, Provenance, Usage};
use crate::task::{bounds, Locality};

/// A claim request.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"worker_id": "gpu-box-1", "task_types": ["summarize"],
    "route": "local", "max": 1, "wait_seconds": 20})))]
pub struct ClaimBody {
    /// The worker's own name, 1..200 bytes (recorded on the task).
    #[schema(min_length = 1, max_length = 200)]
    pub worker_id: String,
    /// Registered task types to take, 1..100 of them.
    #[schema(min_items = 1, max_items = 100)]
    pub task_types: Vec<String>,
    /// `local` or `external`: a `local_only` task never goes to an external worker.
    #[schema(pattern = "^(local|external)$")]
    pub route: String,
    /// 1..100.
    #[schema(minimum = 1, maximum = 100)]
    pub max: i64,
    /// Long-poll up to this many seconds (0..30) while nothing is claimable.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 30)]
    pub wait_seconds: Option<u64>,
}

/// A claimed task: everything needed to run one attempt and fence its writes.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(examples(json!({"id": "0193a5c2-7f00-7000-8000-000000000001",
    "task_type": "summarize", "attempt": 1,
    "lease_token": "0193a5c2-8000-7000-8000-0000000000aa",
    "lease_expires_at": "2026-12-01T05:00:31Z", "input": {"text": "Dear team, ..."},
    "snapshot": null, "deadline_at": null, "traceparent": null})))]
pub struct ClaimedView {
    pub id: Uuid,
    pub task_type: String,
    pub attempt: i32,
    /// The fencing token: every later write of this attempt carries it.
    pub lease_token: Uuid,
    pub lease_expires_at: DateTime<Utc>,
    pub input: serde_json::Value,
    /// The last snapshot of a resumed task.
    pub snapshot: Option<serde_json::Value>,
    pub deadline_at: Option<DateTime<Utc>>,
    /// The server ends the attempt as `attempt_timeout` at this time whatever the
    /// worker says (claim time + the type's attempt timeout); a later `complete` is
    /// refused with 409 `lease_lost`. The lease never runs past it.
    pub attempt_deadline_at: DateTime<Utc>,
    /// W3C trace context of this claim, in the trace of the task's submit: a worker
    /// that starts its spans as its children continues the submitter's trace.
    pub traceparent: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClaimAnswer {
    pub tasks: Vec<ClaimedView>,
}

/// A worker-emitted event.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkerEvent {
    /// `task.output` or `task.progress`.
    #[serde(rename = "type")]
    #[schema(pattern = "^task\\.(output|progress)$")]
    pub kind: String,
    /// At most 64 KiB.
    #[serde(default)]
    pub data: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"lease_token": "0193a5c2-8000-7000-8000-0000000000aa",
    "progress": 40, "phase": "running", "snapshot": {"page": 4},
    "events": [{"type": "task.output", "data": {"text": "partial"}}]})))]
pub struct HeartbeatBody {
    pub lease_token: Uuid,
    /// 0..100.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 100)]
    pub progress: Option<i32>,
    /// `loading` or `running`.
    #[serde(default)]
    #[schema(pattern = "^(loading|running)$")]
    pub phase: Option<String>,
    /// A resume snapshot, at most 1 MiB.
    #[serde(default)]
    pub snapshot: Option<serde_json::Value>,
    /// At most 100.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub events: Option<Vec<WorkerEvent>>,
    /// Text to append to the attempt's live output (at most 64 KiB), as
    /// `POST /v1/worker/tasks/{id}/output` does.
    #[serde(default)]
    #[schema(max_length = 65536)]
    pub output: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BeatView {
    pub lease_expires_at: DateTime<Utc>,
    /// The owner asked to cancel: stop and acknowledge with `cancelled`.
    pub cancel_requested: bool,
}

/// What an attempt consumed: the provider's tokens, or units of the worker's own
/// (charged instead of tokens when given). Each 0..10^12; at least one.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UsageBody {
    #[serde(default)]
    #[schema(minimum = 0)]
    pub input_tokens: Option<i64>,
    #[serde(default)]
    #[schema(minimum = 0)]
    pub output_tokens: Option<i64>,
    /// Defaults to input + output.
    #[serde(default)]
    #[schema(minimum = 0)]
    pub total_tokens: Option<i64>,
    /// Budget units (v1): charged instead of `total_tokens` when given.
    #[serde(default)]
    #[schema(minimum = 0)]
    pub units: Option<i64>,
}

/// Where the attempt ran. Names are 1..200 bytes.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProvenanceBody {
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    /// The configured route's name (it names its circuit breaker).
    #[serde(default)]
    pub route_name: Option<String>,
    /// Informational (`local` or `external`): the claim's locality is what is recorded.
    #[serde(default)]
    #[schema(pattern = "^(local|external)$")]
    pub route: Option<String>,
    /// The model the provider says answered (an OpenAI-compatible answer's `model`,
    /// often a dated snapshot of the one asked for).
    #[serde(default)]
    pub response_model: Option<String>,
    /// The provider's `system_fingerprint`, when it gave one.
    #[serde(default)]
    pub system_fingerprint: Option<String>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteBody {
    pub lease_token: Uuid,
    pub result: serde_json::Value,
    #[serde(default)]
    pub usage: Option<UsageBody>,
    #[serde(default)]
    pub provenance: Option<ProvenanceBody>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"lease_token": "0193a5c2-8000-7000-8000-0000000000aa",
    "code": "model_overloaded", "message": "the model answered 503", "retryable": true,
    "retry_after_seconds": 30})))]
pub struct FailBody {
    pub lease_token: Uuid,
    /// 1..64 bytes.
    #[schema(min_length = 1, max_length = 64)]
    pub code: String,
    /// Cut to 1 KiB.
    pub message: String,
    pub retryable: bool,
    #[serde(default)]
    #[schema(minimum = 0, maximum = 86400)]
    pub retry_after_seconds: Option<u64>,
    /// What the failed attempt consumed (it is charged all the same).
    #[serde(default)]
    pub usage: Option<UsageBody>,
    #[serde(default)]
    pub provenance: Option<ProvenanceBody>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FallbackBody {
    pub lease_token: Uuid,
    pub reason: String,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelledBody {
    pub lease_token: Uuid,
}

/// The task's state after a settlement.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Settled {
    pub state: String,
}

/// The largest count a worker may report.
const MAX_USAGE: i64 = 1_000_000_000_000;

/// A worker's reported usage and provenance, checked: the attempt's facts and its
/// budget units.
pub fn facts(
    usage: Option<&UsageBody>,
    provenance: Option<&ProvenanceBody>,
) -> Result<(Facts, Option<i64>), ApiError> {
    let mut facts = Facts::default();
    let mut units = None;
    if let Some(usage) = usage {
        for (field, value) in [
            ("usage.input_tokens", usage.input_tokens),
            ("usage.output_tokens", usage.output_tokens),
            ("usage.total_tokens", usage.total_tokens),
            ("usage.units", usage.units),
        ] {
            if value.is_some_and(|v| !(0..=MAX_USAGE).contains(&v)) {
                return Err(ApiError::invalid(field, "must be 0 to 10^12"));
            }
        }
        let (input, output, total) = (usage.input_tokens, usage.output_tokens, usage.total_tokens);
        if input.is_none() && output.is_none() && total.is_none() && usage.units.is_none() {
            return Err(ApiError::invalid(
                "usage",
                "must name input_tokens, output_tokens, total_tokens or units",
            ));
        }
        if input.is_some() || output.is_some() || total.is_some() {
            let (input, output) = (input.unwrap_or(0), output.unwrap_or(0));
            facts.usage = Some(Usage {
                input_tokens: input,
                output_tokens: output,
                total_tokens: total.unwrap_or(input + output),
            });
        }
        units = usage.units;
    }
    if let Some(provenance) = provenance {
        for (field, value) in [
            ("provenance.provider", &provenance.provider),
            ("provenance.model", &provenance.model),
            ("provenance.route_name", &provenance.route_name),
            ("provenance.response_model", &provenance.response_model),
            (
                "provenance.system_fingerprint",
                &provenance.system_fingerprint,
            ),
        ] {
            if let Some(value) = value {
                bounds::key(field, value).map_err(ApiError::Validation)?;
            }
        }
        let locality = match provenance.route.as_deref() {
            None | Some("local") => Locality::Local,
            Some("external") => Locality::External,
            Some(_) => {
                return Err(ApiError::invalid(
                    "provenance.route",
                    "must be local or external",
                ))
            }
        };
        facts.provenance = Some(
            Provenance {
                provider: provenance.provider.clone().unwrap_or_default(),
                model: provenance.model.clone().unwrap_or_default(),
                // Informational: the claim's locality is recorded (store::attempts).
                locality,
                route_name: provenance.route_name.clone().unwrap_or_default(),
                response_model: provenance.response_model.clone(),
                system_fingerprint: provenance.system_fingerprint.clone(),
            }
            .bounded(),
        );
    }
    Ok((facts, units))
}
