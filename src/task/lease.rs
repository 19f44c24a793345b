//! What a worker holding a lease sends and hears back between claim and settle: the
//! heartbeat and its answer, and the leases a batched heartbeat extends.

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// What a heartbeat carries besides the lease extension.
#[derive(Debug, Clone, Default)]
pub struct Beat {
    pub progress: Option<i16>,
    pub phase: Option<String>,
    pub snapshot: Option<serde_json::Value>,
    /// Worker-emitted events, each `{"type", "data"}`, already validated.
    pub events: Vec<serde_json::Value>,
}

/// The answer to a heartbeat.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BeatAnswer {
    /// The attempt the lease is of.
    pub attempt: i32,
    pub lease_expires_at: DateTime<Utc>,
    pub cancel_requested: bool,
}

/// One lease to extend: the attempt's task and lease token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Lease {
    pub id: Uuid,
    pub lease_token: Uuid,
}

/// What a batched heartbeat learned of one lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseStatus {
    /// Extended; cancellation was requested when `cancel_requested`.
    Extended { cancel_requested: bool },
    /// The lease was lost or the task is gone: the attempt must stop.
    Lost,
}
