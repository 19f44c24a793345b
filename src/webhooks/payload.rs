//! The body of a notification: `{"type","timestamp","data"}` where `data` is the task
//! view exactly as an app token reads it from `GET /v1/tasks/{id}` (the same
//! `TaskView`), except that a result over 64 KiB is left out (`result: null`) and
//! `result_link` names the route that returns it: receivers get a bounded body, and
//! the task keeps the result until it is pruned.
//!
//! The body is serialized straight from the view, not through a `serde_json::Value`:
//! it is built once per attempt, and a tree of maps per delivery would be a visible
//! share of a delivering replica's CPU.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;

use crate::task::record::TaskRecord;
use crate::view::TaskView;

/// The largest result sent inline, serialized.
pub const MAX_INLINE_RESULT: usize = 64 * 1024;

#[derive(Serialize)]
struct Envelope<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    timestamp: String,
    data: Data,
}

#[derive(Serialize)]
struct Data {
    #[serde(flatten)]
    view: TaskView,
    #[serde(skip_serializing_if = "Option::is_none")]
    result_link: Option<String>,
}

/// The body bytes of notification `event` about `task`, which happened at `at`.
pub fn body(event: &str, at: DateTime<Utc>, task: TaskRecord) -> Vec<u8> {
    let id = task.id;
    let oversized = task
        .result
        .as_ref()
        .is_some_and(|r| serialized_len(r).map_or(true, |n| n > MAX_INLINE_RESULT));
    let mut view = TaskView::new(task, false);
    let result_link = oversized.then(|| {
        view.result = None;
        format!("/v1/tasks/{id}")
    });
    let envelope = Envelope {
        kind: event,
        timestamp: at.to_rfc3339_opts(SecondsFormat::Micros, true),
        data: Data { view, result_link },
    };
    serde_json::to_vec(&envelope).unwrap_or_default()
}

/// How many bytes `value` serializes to, counted without keeping them.
fn serialized_len(value: &serde_json::Value) -> serde_json::Result<usize> {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value)?;
    Ok(count.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::TaskState;
    use serde_json::{json, Value};

    fn task(result: Value) -> TaskRecord {
        let now = Utc::now();
        TaskRecord {
            id: uuid::Uuid::now_v7(),
            app: "mail".into(),
            scope_id: "box-1".into(),
            source_id: None,
            usage_subject: Some("user-1".into()),
            task_type: "noop".into(),
            state: TaskState::Succeeded,
            priority: 0,
            attempt: 1,
            max_attempts: 3,
            progress: None,
            phase: None,
            created_at: now,
            started_at: Some(now),
            finished_at: Some(now),
            released_at: None,
            deadline_at: None,
            result: Some(result),
            error_code: None,
            error_message: None,
            usage_units: None,
            provider: None,
            model: None,
            route: None,
            attempts: None,
        }
    }

    #[test]
    fn the_body_is_the_app_view_in_an_envelope() {
        let record = task(json!({"summary": "ok"}));
        let id = record.id;
        let body: Value =
            serde_json::from_slice(&body("task.succeeded", Utc::now(), record)).unwrap();
        assert_eq!(body["type"], "task.succeeded");
        assert!(body["timestamp"].as_str().unwrap().ends_with('Z'));
        assert_eq!(body["data"]["id"], id.to_string());
        assert_eq!(body["data"]["result"]["summary"], "ok");
        assert_eq!(body["data"]["usage_subject"], "user-1");
        assert!(body["data"].get("result_link").is_none());
        assert!(body["data"].get("lease_token").is_none());
    }

    #[test]
    fn the_data_is_exactly_what_the_task_route_answers() {
        let record = task(json!({"summary": "ok", "n": [1, 2]}));
        let route = serde_json::to_value(TaskView::new(record.clone(), false)).unwrap();
        let body: Value =
            serde_json::from_slice(&body("task.succeeded", Utc::now(), record)).unwrap();
        assert_eq!(body["data"], route);
    }

    #[test]
    fn a_result_at_the_bound_is_sent_inline() {
        // A JSON string of n bytes serializes to n + 2 with its quotes.
        let record = task(json!("x".repeat(MAX_INLINE_RESULT - 2)));
        let body: Value =
            serde_json::from_slice(&body("task.succeeded", Utc::now(), record)).unwrap();
        assert_eq!(
            body["data"]["result"].as_str().unwrap().len(),
            MAX_INLINE_RESULT - 2
        );
        assert!(body["data"].get("result_link").is_none());
    }

    #[test]
    fn a_large_result_becomes_a_link() {
        let record = task(json!("x".repeat(MAX_INLINE_RESULT)));
        let id = record.id;
        let bytes = body("task.succeeded", Utc::now(), record);
        assert!(bytes.len() < 4096);
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        assert!(body["data"]["result"].is_null());
        assert_eq!(body["data"]["result_link"], format!("/v1/tasks/{id}"));
    }
}
