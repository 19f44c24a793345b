//! The JSON shapes of the worker protocol's batches and live output writes. Unknown
//! fields are refused everywhere.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::worker_dto::{ProvenanceBody, UsageBody};
use crate::http::dto::ErrorView;

/// A batched heartbeat: 1..500 leases of the worker's running attempts.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"worker_id": "gpu-box-1", "items": [
    {"id": "0193a5c2-7f00-7000-8000-000000000001",
     "lease_token": "0193a5c2-8000-7000-8000-0000000000aa", "progress": 40,
     "output": "The quarterly report "},
    {"id": "0193a5c2-7f00-7000-8000-000000000002",
     "lease_token": "0193a5c2-8000-7000-8000-0000000000ab"}]})))]
pub struct HeartbeatsBody {
    /// The worker's own name, 1..200 bytes.
    #[schema(min_length = 1, max_length = 200)]
    pub worker_id: String,
    /// 1..500 items, each of a different task.
    #[schema(min_items = 1, max_items = 500)]
    pub items: Vec<HeartbeatItem>,
}

/// One lease of a batched heartbeat, and what the worker reports with it.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HeartbeatItem {
    pub id: Uuid,
    pub lease_token: Uuid,
    /// 0..100.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 100)]
    pub progress: Option<i32>,
    /// A resume snapshot, at most 1 MiB.
    #[serde(default)]
    pub snapshot: Option<serde_json::Value>,
    /// Text to append to the attempt's live output (at most 64 KiB).
    #[serde(default)]
    #[schema(max_length = 65536)]
    pub output: Option<String>,
}

/// One answer per item, in the order given.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HeartbeatsAnswer {
    pub items: Vec<HeartbeatItemAnswer>,
}

/// What a batched heartbeat did with one lease.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(examples(json!({"id": "0193a5c2-7f00-7000-8000-000000000001", "status": "ok",
    "cancel_requested": false, "lease_expires_at": "2026-12-01T05:00:31Z"})))]
pub struct HeartbeatItemAnswer {
    pub id: Uuid,
    /// `ok` (extended), `lease_lost` or `task_gone`: on either of the last two the
    /// worker stops the attempt.
    #[schema(pattern = "^(ok|lease_lost|task_gone)$")]
    pub status: String,
    /// The owner asked to cancel: stop and acknowledge with `cancelled`.
    pub cancel_requested: bool,
    /// The extended lease's end; null unless `ok`.
    pub lease_expires_at: Option<DateTime<Utc>>,
}

/// A batched completion: 1..500 attempts that succeeded.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"worker_id": "gpu-box-1", "items": [
    {"id": "0193a5c2-7f00-7000-8000-000000000001",
     "lease_token": "0193a5c2-8000-7000-8000-0000000000aa", "result": {"summary": "..."},
     "usage": {"input_tokens": 812, "output_tokens": 64}}]})))]
pub struct CompleteManyBody {
    /// The worker's own name, 1..200 bytes.
    #[schema(min_length = 1, max_length = 200)]
    pub worker_id: String,
    /// 1..500 items, each of a different task.
    #[schema(min_items = 1, max_items = 500)]
    pub items: Vec<CompleteItem>,
}

/// One attempt's success, as `POST /v1/worker/tasks/{id}/complete` takes it.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteItem {
    pub id: Uuid,
    pub lease_token: Uuid,
    pub result: serde_json::Value,
    #[serde(default)]
    pub usage: Option<UsageBody>,
    #[serde(default)]
    pub provenance: Option<ProvenanceBody>,
}

/// One answer per item, in the order given.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CompleteManyAnswer {
    pub items: Vec<CompleteItemAnswer>,
}

/// What a batched completion did with one attempt.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(examples(json!({"id": "0193a5c2-7f00-7000-8000-000000000001",
    "status": "succeeded"})))]
pub struct CompleteItemAnswer {
    pub id: Uuid,
    /// `succeeded`, `lease_lost`, `task_gone` or `invalid_output` (the task type has an
    /// output schema and `result.output` does not match it; nothing was written).
    #[schema(pattern = "^(succeeded|lease_lost|task_gone|invalid_output)$")]
    pub status: String,
    /// With `invalid_output`: its code and what did not match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorView>,
}

/// Text for a running attempt's live output.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"lease_token": "0193a5c2-8000-7000-8000-0000000000aa",
    "text": "The quarterly report shows "})))]
pub struct OutputBody {
    pub lease_token: Uuid,
    /// Appended to the attempt's text; at most 64 KiB.
    #[schema(max_length = 65536)]
    pub text: String,
}

/// A batched live output write: text for 1..500 running attempts, each of a different
/// task (a worker's round of output from all its attempts in one request).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"items": [
    {"id": "0193a5c2-7f00-7000-8000-000000000001",
     "lease_token": "0193a5c2-8000-7000-8000-0000000000aa", "text": "The quarterly "},
    {"id": "0193a5c2-7f00-7000-8000-000000000002",
     "lease_token": "0193a5c2-8000-7000-8000-0000000000ab", "text": "Dear customer, "}]})))]
pub struct OutputsBody {
    /// 1..500 items, each of a different task.
    #[schema(min_items = 1, max_items = 500)]
    pub items: Vec<OutputItemBody>,
}

/// Text for one running attempt's live output, as `POST /v1/worker/tasks/{id}/output`
/// takes it.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputItemBody {
    pub id: Uuid,
    pub lease_token: Uuid,
    /// Appended to the attempt's text; at most 64 KiB.
    #[schema(max_length = 65536)]
    pub text: String,
}

/// One answer per item, in the order given.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OutputsAnswer {
    pub items: Vec<OutputItemAnswer>,
}

/// What a batched live output write did with one item.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(examples(json!({"id": "0193a5c2-7f00-7000-8000-000000000001", "status": "ok"})))]
pub struct OutputItemAnswer {
    pub id: Uuid,
    /// `ok` (appended), `lease_lost` (nothing appended) or `task_gone`: on either of the
    /// last two the worker stops the attempt.
    #[schema(pattern = "^(ok|lease_lost|task_gone)$")]
    pub status: String,
}
