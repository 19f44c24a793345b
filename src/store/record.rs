//! A task as the API shows it: one row of the `tasklane.task_views` view.

use chrono::{DateTime, Utc};
use tokio_postgres::Row;
use uuid::Uuid;

use super::attempts::AttemptSummary;
use crate::task::TaskState;

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

impl TaskRecord {
    /// Reads the `task_views` columns of a row.
    pub fn from_row(row: &Row) -> Result<Self, tokio_postgres::Error> {
        let state: String = row.try_get("state")?;
        Ok(TaskRecord {
            id: row.try_get("id")?,
            app: row.try_get("app")?,
            scope_id: row.try_get("scope_id")?,
            source_id: row.try_get("source_id")?,
            usage_subject: row.try_get("usage_subject")?,
            task_type: row.try_get("task_type")?,
            // The CHECK constraint on tasks.state admits only our names.
            state: state.parse().expect("tasks.state holds a known state"),
            priority: row.try_get("priority")?,
            attempt: row.try_get("attempt")?,
            max_attempts: row.try_get("max_attempts")?,
            progress: row.try_get("progress")?,
            phase: row.try_get("phase")?,
            created_at: row.try_get("created_at")?,
            started_at: row.try_get("started_at")?,
            finished_at: row.try_get("finished_at")?,
            released_at: row.try_get("released_at")?,
            deadline_at: row.try_get("deadline_at")?,
            result: row.try_get("result")?,
            error_code: row.try_get("error_code")?,
            error_message: row.try_get("error_message")?,
            usage_units: row.try_get("usage_units")?,
            provider: row.try_get("provider")?,
            model: row.try_get("model")?,
            route: row.try_get("route")?,
            attempts: None,
        })
    }
}
