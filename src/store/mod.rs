//! The only code that talks to PostgreSQL. Every function takes a generic client
//! (`tokio_postgres::GenericClient`: a client or a transaction), so an application can
//! call it inside its own transaction. Statements live in `sql/`, one per file.

pub mod activity;
pub mod admission;
pub mod app_weights;
pub mod attempts;
pub mod budget;
pub mod cached;
pub mod cancel;
pub mod circuits;
pub mod claim;
pub mod clock;
pub mod complete_many;
pub mod connect;
pub mod events;
pub mod health_sample;
pub mod lease;
pub mod lifecycle;
pub mod limits;
pub mod listen;
pub mod live_output;
pub mod migrate;
pub mod notify;
pub mod outbox;
pub mod overview;
pub mod prune;
pub mod query;
pub mod queue_depth;
mod record;
pub mod recover;
pub mod remote_lease;
pub mod replicas;
pub mod retry;
pub mod statement;
pub mod statistics;
pub mod submit;
pub mod submit_batch;
pub mod task_types;
pub mod tokens;
pub mod turn_floors;
pub mod vacuum;
pub mod webhooks;

pub use lease::LeaseError;
pub use submit::SubmitError;

pub use connect::{Pool, Pooled};
pub use statement::Statements;
pub use tokio_postgres::GenericClient;

/// A connection-level failure or a statement that PostgreSQL refused.
pub type DbError = tokio_postgres::Error;

/// A deadpool connection as a plain client, so pooled connections can be passed where a
/// generic client is expected.
pub fn client(object: &Pooled) -> &tokio_postgres::Client {
    object
}

/// The name of the channel workers LISTEN on to hear of new claimable work.
pub const WAKEUP_CHANNEL: &str = "tasklane_wakeup";

/// The channel every task's event writes are NOTIFYed on (payload: the task id), by a
/// trigger on `tasklane.task_events`; HTTP waiters of each replica share one LISTEN.
pub const EVENTS_CHANNEL: &str = "tasklane_events";
