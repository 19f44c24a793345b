//! A task as the API shows it: one row of the `tasklane.task_views` view.

use tokio_postgres::Row;

use crate::task::record::TaskRecord;

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
