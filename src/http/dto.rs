//! The JSON shapes of the application operations, with their OpenAPI schemas. The task
//! view itself is in `crate::view`, which webhook payloads share.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::service::Event;
use crate::task::{Privacy, RestartPolicy, SubmitRequest};
pub use crate::view::{location, ErrorView, Links, Provenance, TaskView, UsageView};

/// The submit body. Unknown fields are refused.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"task_type": "summarize", "scope_id": "mailbox-7",
    "effect_key": "req-8812", "source_id": "conv-17:42", "usage_subject": "user-9",
    "input": {"text": "Dear team, ..."}, "priority": 0, "deadline_seconds": 600})))]
pub struct SubmitBody {
    /// A registered task type.
    #[schema(min_length = 1, max_length = 200)]
    pub task_type: String,
    /// 1..200 bytes.
    #[schema(min_length = 1, max_length = 200)]
    pub scope_id: String,
    /// The idempotency key, 1..200 bytes.
    #[schema(min_length = 1, max_length = 200)]
    pub effect_key: String,
    #[serde(default)]
    #[schema(min_length = 1, max_length = 200)]
    pub source_id: Option<String>,
    #[serde(default)]
    #[schema(min_length = 1, max_length = 200)]
    pub usage_subject: Option<String>,
    /// Any JSON value, bounded in size by the deployment.
    pub input: serde_json::Value,
    /// -100..100.
    #[serde(default)]
    #[schema(minimum = -100, maximum = 100)]
    pub priority: Option<i32>,
    /// Queue deadline, 1..604800 seconds.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 604800)]
    pub deadline_seconds: Option<i64>,
    /// 1..25.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 25)]
    pub max_attempts: Option<i32>,
    #[serde(default)]
    #[schema(value_type = Option<String>, pattern = "^(fail|retry|resume)$")]
    pub on_restart: Option<RestartPolicy>,
    #[serde(default)]
    #[schema(value_type = Option<String>, pattern = "^(local_only|external_allowed)$")]
    pub privacy: Option<Privacy>,
}

impl From<SubmitBody> for SubmitRequest {
    fn from(body: SubmitBody) -> Self {
        SubmitRequest {
            task_type: body.task_type,
            scope_id: body.scope_id,
            effect_key: body.effect_key,
            source_id: body.source_id,
            usage_subject: body.usage_subject,
            input: body.input,
            priority: body.priority,
            deadline_seconds: body.deadline_seconds,
            max_attempts: body.max_attempts,
            on_restart: body.on_restart,
            privacy: body.privacy,
        }
    }
}

/// A page of tasks, newest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TaskPage {
    pub items: Vec<TaskView>,
    /// Pass as `cursor` for the next page; null on the last one.
    pub next_cursor: Option<String>,
}

/// One event of a task.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EventView {
    pub seq: i32,
    #[serde(rename = "type")]
    pub kind: String,
    pub data: serde_json::Value,
    pub at: DateTime<Utc>,
}

impl From<Event> for EventView {
    fn from(event: Event) -> Self {
        EventView {
            seq: event.seq,
            kind: event.kind,
            data: event.data,
            at: event.at,
        }
    }
}

/// A page of events, ascending.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EventPage {
    pub items: Vec<EventView>,
}

/// Query of the task listing.
#[derive(Debug, Clone, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    pub scope_id: Option<String>,
    /// One of the task states.
    pub state: Option<String>,
    pub task_type: Option<String>,
    /// Exactly this source (never a prefix or pattern).
    pub source_id: Option<String>,
    /// 1..100, default 50.
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// Query of the event listing.
#[derive(Debug, Clone, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// Events with a seq above this one (default 0).
    #[param(minimum = 0)]
    pub after: Option<i32>,
    /// 1..100, default 100.
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
}

/// Query of submit.
#[derive(Debug, Clone, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SubmitQuery {
    /// Wait up to this many seconds (0..60) for a terminal state.
    #[param(minimum = 0, maximum = 60)]
    pub wait: Option<u64>,
}
