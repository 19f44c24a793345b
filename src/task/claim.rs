//! A claim as the worker sees it: who claims, which claim statement, and the task each
//! claimed attempt runs with.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Locality, Privacy};

/// A task as its worker receives it: everything needed to run and fence one attempt.
#[derive(Debug, Clone)]
pub struct ClaimedTask {
    pub id: Uuid,
    pub app: String,
    pub scope_id: String,
    pub task_type: String,
    pub attempt: i32,
    pub max_attempts: i32,
    pub lease_token: Uuid,
    pub lease_expires_at: DateTime<Utc>,
    pub lease_seconds: i32,
    pub attempt_timeout_seconds: i32,
    pub input: serde_json::Value,
    /// The last snapshot, for a task resumed after its worker was lost.
    pub snapshot: Option<serde_json::Value>,
    pub deadline_at: Option<DateTime<Utc>>,
    pub privacy: Privacy,
    /// Since when the task was claimable (queued, or its retry due): the pickup wait
    /// ends at the claim.
    pub claimable_at: DateTime<Utc>,
    /// The submit's trace context, which the attempt's spans continue.
    pub traceparent: Option<String>,
    /// When the server ends this attempt as `attempt_timeout` whatever the worker says:
    /// claim time + the task's attempt timeout. The lease never runs past it.
    pub attempt_deadline_at: DateTime<Utc>,
}

/// Who is claiming.
#[derive(Debug, Clone)]
pub struct Claimant<'a> {
    pub worker_id: &'a str,
    pub locality: Locality,
    /// The replica process whose in-process worker claims; `None` for remote workers.
    pub replica_id: Option<Uuid>,
}

/// Which claim statement: the resource-aware one takes a slot for each task whose type
/// names a resource; the plain one leaves such tasks to resource-aware claimers and
/// stays as cheap as a claim without resources (the aware one costs more to plan).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slots {
    Aware,
    Plain,
}
