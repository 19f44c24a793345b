//! A task as it is read back: the visible fields of one task, how a submit was
//! answered, and the filters and cursors that select tasks for their owner.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::attempt::AttemptSummary;
use super::TaskState;

/// A task's visible fields. Input, lease, digest, effect key and snapshot are not here
/// on purpose: nothing that reads a record can leak them.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TaskRecord {
    pub id: Uuid,
    pub app: String,
    pub scope_id: String,
    pub source_id: Option<String>,
    pub usage_subject: Option<String>,
    pub task_type: String,
    pub state: TaskState,
    pub priority: i16,
    pub attempt: i32,
    pub max_attempts: i32,
    pub progress: Option<i16>,
    pub phase: Option<String>,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub released_at: Option<DateTime<Utc>>,
    pub deadline_at: Option<DateTime<Utc>>,
    pub result: Option<serde_json::Value>,
    pub error_code: Option<String>,
    pub error_message: Option<String>,
    pub usage_units: Option<i64>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub route: Option<String>,
    /// Usage summed over the attempts and the last one's provenance, when the reader
    /// asked for them (`Tasklane::with_attempts`); `None` straight from a row.
    pub attempts: Option<AttemptSummary>,
}

/// How a submit was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubmitOutcome {
    /// A new task was created (and queued).
    Created,
    /// The identity already had this request in flight: the caller observes it.
    Joined,
    /// The identity already finished (any terminal state): returned as it is, no
    /// admission, no charge.
    Existing,
}

#[derive(Debug, Clone)]
pub struct Submitted {
    pub task: TaskRecord,
    pub outcome: SubmitOutcome,
}

/// Filters of a listing; `None` filters nothing.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    pub scope_id: Option<String>,
    pub state: Option<TaskState>,
    pub task_type: Option<String>,
    /// Exactly this source (`%` and `_` are ordinary characters).
    pub source_id: Option<String>,
    /// List tasks older than this id (the previous page's last id).
    pub before: Option<Uuid>,
}

/// A `(scope, source)` pair with unreleased tasks; also the keyset cursor of the next
/// page (the last pair of a full page).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct SourceRef {
    pub scope_id: String,
    /// `None` for tasks submitted without a source.
    pub source_id: Option<String>,
}
