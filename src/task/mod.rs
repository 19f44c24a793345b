//! The pure domain of tasklane: task states and their legal transitions, retry backoff,
//! the settlement of an attempt's report (`settlement`), restart-policy decisions, the validation bounds of every field and the task-types
//! file's rules; and the types every layer above passes around (a task as read, a claim,
//! a lease, an attempt's outcome, an event, an owner), which `store` reads rows into and
//! the service answers with. Nothing here does I/O, so every rule is unit-tested without
//! a database; `store` applies the decisions.

pub mod app_weight;
pub mod attempt;
pub mod backoff;
pub mod bounds;
pub mod catalog;
pub mod circuit;
pub mod claim;
pub mod event;
pub mod lease;
pub mod live;
pub mod locality;
pub mod outcome;
pub mod output;
pub mod output_schema;
pub mod owner;
pub mod record;
pub mod redact;
pub mod remote;
pub mod request;
pub mod restart;
pub mod routes;
pub mod settlement;
pub mod state;
pub mod task_type;
pub mod types_file;

pub use catalog::TaskTypes;
pub use locality::{Locality, Privacy};
pub use request::{NewTask, SubmitRequest};
pub use restart::{RestartDecision, RestartPolicy};
pub use state::{TaskState, Transition};
pub use task_type::{Executor, TaskType};

/// A task id: a UUIDv7, so ids sort by creation time and keyset paging needs no second key.
pub type TaskId = uuid::Uuid;

/// A new task id, time-ordered.
pub fn new_task_id() -> TaskId {
    uuid::Uuid::now_v7()
}

/// The stable error codes a task can fail or be requeued with.
pub mod codes {
    pub const HANDLER_ERROR: &str = "handler_error";
    pub const PERMANENT_ERROR: &str = "permanent_error";
    pub const ATTEMPTS_EXHAUSTED: &str = "attempts_exhausted";
    pub const ATTEMPT_TIMEOUT: &str = "attempt_timeout";
    pub const LEASE_EXPIRED: &str = "lease_expired";
    pub const SERVER_RESTARTED: &str = "server_restarted";
    pub const QUEUE_DEADLINE_EXCEEDED: &str = "queue_deadline_exceeded";
    pub const NO_FALLBACK_ALLOWED: &str = "no_fallback_allowed";
    /// The upstream could not be reached or answered a transient error (its last one).
    pub const UPSTREAM_UNAVAILABLE: &str = "upstream_unavailable";
    /// The upstream refused the request (a 4xx that another attempt will not change).
    pub const UPSTREAM_REJECTED: &str = "upstream_rejected";
    /// The provider account's quota or spend limit is used up.
    pub const UPSTREAM_QUOTA_EXHAUSTED: &str = "upstream_quota_exhausted";
    /// Every route the task may use has an open circuit.
    pub const CIRCUIT_OPEN: &str = "circuit_open";
    /// The task's usage subject or background budget is spent.
    pub const BUDGET_EXHAUSTED: &str = "budget_exhausted";
    /// The answer is not the structured output the type's `output_schema` asks for.
    pub const INVALID_OUTPUT: &str = "invalid_output";

    /// Every code above: what a task's `error.code` can be. The documentation's table of
    /// task error codes is checked against it, so a new code cannot go undocumented.
    pub const ALL: [&str; 14] = [
        HANDLER_ERROR,
        PERMANENT_ERROR,
        ATTEMPTS_EXHAUSTED,
        ATTEMPT_TIMEOUT,
        LEASE_EXPIRED,
        SERVER_RESTARTED,
        QUEUE_DEADLINE_EXCEEDED,
        NO_FALLBACK_ALLOWED,
        UPSTREAM_UNAVAILABLE,
        UPSTREAM_REJECTED,
        UPSTREAM_QUOTA_EXHAUSTED,
        CIRCUIT_OPEN,
        BUDGET_EXHAUSTED,
        INVALID_OUTPUT,
    ];
}
