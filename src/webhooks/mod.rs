//! Terminal notifications: the transactional outbox written by the queue
//! mirror's trigger when a task becomes terminal (migrations V11, V22), delivered at
//! least once, signed as Standard Webhooks, by the maintenance role of any replica.
//!
//! Pure parts, unit-tested without a database: [`signature`] (signing and secrets),
//! [`schedule`] (retry schedule, `Retry-After`, what an answer means), [`guard`] (which
//! addresses may be reached), [`endpoint`] (what an app may register), [`payload`]
//! (the body) and [`window`] (how many rows to claim ahead per endpoint). The I/O:
//! [`sender`] (one HTTP attempt), [`deliverer`] (the loop that claims, sends and
//! records) and [`handoff`] (a replica's batch settles claim the notifications they
//! write for its deliverer, V31). Endpoints are managed through `service::webhooks`.

mod attempt;
pub mod deliverer;
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
