//! The task as its owner sees it, in the shape the HTTP API answers and webhook payloads
//! carry: built from a `TaskRecord` (which holds no lease, digest, effect key or
//! snapshot) and redacted for scope tokens (no failure text, usage subject or
//! provenance). Both `http` and `webhooks` render it, so it lives below them.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::task::attempt::Usage;
use crate::task::record::TaskRecord;

/// A task as its owner sees it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(examples(json!({"id": "0193a5c2-7f00-7000-8000-000000000001",
    "task_type": "summarize", "scope_id": "mailbox-7", "source_id": "conv-17:42",
    "usage_subject": "user-9", "state": "running", "priority": 0, "attempt": 1,
    "max_attempts": 3, "progress": 40, "phase": "running",
    "created_at": "2026-12-01T05:00:00Z", "started_at": "2026-12-01T05:00:01Z",
    "finished_at": null, "released_at": null, "deadline_at": "2026-12-01T05:10:00Z",
    "result": null, "error": null,
    "links": {"self": "/v1/tasks/0193a5c2-7f00-7000-8000-000000000001",
        "events": "/v1/tasks/0193a5c2-7f00-7000-8000-000000000001/events"}})))]
pub struct TaskView {
    pub id: Uuid,
    pub task_type: String,
    pub scope_id: String,
    pub source_id: Option<String>,
    /// Absent for scope tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage_subject: Option<String>,
    pub state: String,
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
    pub error: Option<ErrorView>,
    /// Tokens summed over every attempt (null when none reported any); absent for
    /// scope tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<UsageView>)]
    pub usage: Option<Option<UsageView>>,
    /// Provider, model, route, route name, response model and system fingerprint of the
    /// last attempt that recorded them (null before any); absent for scope tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Provenance>)]
    pub provenance: Option<Option<Provenance>>,
    pub links: Links,
}

/// A failure: its stable code and (not for scope tokens) its bounded message.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorView {
    pub code: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Where an attempt ran.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Provenance {
    pub provider: Option<String>,
    pub model: Option<String>,
    /// `local` or `external`: the locality of the worker that claimed the attempt.
    pub route: Option<String>,
    /// The configured route's name.
    pub route_name: Option<String>,
    /// The model the provider says answered (often a dated snapshot of `model`).
    pub response_model: Option<String>,
    /// The provider's `system_fingerprint`, when it gave one.
    pub system_fingerprint: Option<String>,
}

/// Tokens a provider reported.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UsageView {
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub total_tokens: i64,
    /// Task view only: the budget units charged (the worker's own units where it
    /// reported them, else one a token); null when none were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub units: Option<Option<i64>>,
}

impl UsageView {
    pub fn tokens(usage: Usage) -> Self {
        UsageView {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            total_tokens: usage.total_tokens,
            units: None,
        }
    }
}

/// The task view's usage and provenance from the attempt summary, falling back to what
/// the task row kept (tasks that ended before attempts were recorded).
fn attempt_fields(record: &TaskRecord) -> (Option<UsageView>, Option<Provenance>) {
    let summary = record.attempts.clone().unwrap_or_default();
    let usage = match (summary.usage, summary.usage_units.or(record.usage_units)) {
        (None, None) => None,
        (usage, units) => Some(UsageView {
            units: Some(units),
            ..UsageView::tokens(usage.unwrap_or_default())
        }),
    };
    let provenance =
        if summary.provider.is_some() || summary.route_name.is_some() || summary.route.is_some() {
            Some(Provenance {
                provider: summary.provider,
                model: summary.model,
                route: summary.route,
                route_name: summary.route_name,
                response_model: summary.response_model,
                system_fingerprint: summary.system_fingerprint,
            })
        } else if record.provider.is_some() || record.route.is_some() {
            Some(Provenance {
                provider: record.provider.clone(),
                model: record.model.clone(),
                route: record.route.clone(),
                route_name: None,
                response_model: None,
                system_fingerprint: None,
            })
        } else {
            None
        };
    (usage, provenance)
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Links {
    #[serde(rename = "self")]
    pub this: String,
    pub events: String,
}

impl TaskView {
    /// The view of `record`; `redacted` for scope tokens.
    pub fn new(record: TaskRecord, redacted: bool) -> Self {
        let (usage, provenance) = attempt_fields(&record);
        let error = record.error_code.map(|code| ErrorView {
            code,
            message: if redacted { None } else { record.error_message },
        });
        let (usage, provenance) = if redacted {
            (None, None)
        } else {
            (Some(usage), Some(provenance))
        };
        TaskView {
            id: record.id,
            task_type: record.task_type,
            scope_id: record.scope_id,
            source_id: record.source_id,
            usage_subject: if redacted { None } else { record.usage_subject },
            state: record.state.as_str().to_owned(),
            priority: record.priority,
            attempt: record.attempt,
            max_attempts: record.max_attempts,
            progress: record.progress,
            phase: record.phase,
            created_at: record.created_at,
            started_at: record.started_at,
            finished_at: record.finished_at,
            released_at: record.released_at,
            deadline_at: record.deadline_at,
            result: record.result,
            error,
            usage,
            provenance,
            links: Links {
                this: location(record.id),
                events: format!("{}/events", location(record.id)),
            },
        }
    }
}

/// The URL of a task.
pub fn location(id: Uuid) -> String {
    format!("/v1/tasks/{id}")
}
