//! The body of a notification: `{"type","timestamp","data"}` where `data` is the task
//! view exactly as an app token reads it from `GET /v1/tasks/{id}` (the same
//! `TaskView`), except that a result over 64 KiB is left out (`result: null`) and
//! `result_link` names the route that returns it: receivers get a bounded body, and
//! the task keeps the result until it is pruned.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Value};

use crate::http::dto::TaskView;
use crate::store::TaskRecord;

/// The largest result sent inline, serialized.
pub const MAX_INLINE_RESULT: usize = 64 * 1024;

/// The body bytes of notification `event` about `task`, which happened at `at`.
pub fn body(event: &str, at: DateTime<Utc>, task: TaskRecord) -> Vec<u8> {
    let id = task.id;
    let oversized = task
        .result
        .as_ref()
        .is_some_and(|r| serde_json::to_vec(r).map_or(true, |b| b.len() > MAX_INLINE_RESULT));
    let mut data = serde_json::to_value(TaskView::new(task, false)).unwrap_or(Value::Null);
    if oversized {
        if let Some(view) = data.as_object_mut() {
            view.insert("result".into(), Value::Null);
            view.insert("result_link".into(), json!(format!("/v1/tasks/{id}")));
        }
    }
    let envelope = json!({
        "type": event,
        "timestamp": at.to_rfc3339_opts(SecondsFormat::Micros, true),
        "data": data,
    });
    serde_json::to_vec(&envelope).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::TaskState;

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
