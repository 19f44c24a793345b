//! The events of a task: written in the same transaction as the change they report,
//! numbered contiguously from 1 per task.

use chrono::{DateTime, Utc};

/// One event: `seq` is contiguous from 1 per task.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Event {
    pub seq: i32,
    #[serde(rename = "type")]
    pub kind: String,
    pub data: serde_json::Value,
    pub at: DateTime<Utc>,
}

impl Event {
    /// Whether this event reports a terminal state: nothing follows it.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self.kind.as_str(),
            "task.succeeded" | "task.failed" | "task.cancelled"
        )
    }
}
