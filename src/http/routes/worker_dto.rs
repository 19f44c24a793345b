//! The JSON shapes of the worker protocol. Unknown fields are refused everywhere.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

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
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BeatView {
    pub lease_expires_at: DateTime<Utc>,
    /// The owner asked to cancel: stop and acknowledge with `cancelled`.
    pub cancel_requested: bool,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    #[schema(minimum = 0)]
    pub units: i64,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProvenanceBody {
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    /// Informational: the route was recorded by the claim.
    #[serde(default)]
    pub route: Option<String>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteBody {
    pub lease_token: Uuid,
    pub result: serde_json::Value,
    #[serde(default)]
    pub usage: Option<Usage>,
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
