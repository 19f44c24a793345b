//! Terminal notifications: outbox rows (`tasklane.webhook_deliveries`) written in the
//! transaction that makes a task terminal (by the batch complete,
//! `tasklane.complete_tasks_claiming`, for the successes it settles; by the mirror's
//! trigger function, `tasklane.sync_task_queue`, for every other terminal move),
//! delivered at least once, signed as Standard Webhooks, by the maintenance role of any
//! replica.
//!
//! Pure parts, unit-tested without a database: [`signature`] (signing and secrets),
//! [`schedule`] (retry schedule, `Retry-After`, what an answer means), [`guard`] (which
//! addresses may be reached), [`endpoint`] (what an app may register), [`payload`]
//! (the body) and [`window`] (how many rows to claim ahead per endpoint). The I/O:
//! `delivery_attempt` (sign, send and judge one attempt), [`sender`] (the HTTP call),
//! [`deliverer`] (the loop that claims, sends and records) and [`handoff`] (a replica's
//! batch completes claim the notifications they write for its own deliverer). Endpoints
//! are managed through `service::webhooks`.

pub mod deliverer;
mod delivery_attempt;
pub mod endpoint;
pub mod guard;
pub mod handoff;
pub mod payload;
pub mod schedule;
pub mod sender;
pub mod signature;
pub mod window;

pub use deliverer::{Deliverer, DeliveryConfig};
pub use guard::{AddressGuard, Cidr};
pub use schedule::RetrySchedule;
