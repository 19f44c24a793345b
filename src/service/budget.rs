//! The budget recheck before an attempt calls a model provider (issue 12, "Recheck at
//! claim"): a task admitted while its budget had room may find it spent when it runs.
//!
//! INTERFACE STUB (first step): the `openai` executor calls [`Tasklane::reserve_budget`]
//! right before the provider call; the reservation behind it replaces this body
//! without changing the signature.

use super::{ClaimedTask, ServiceError, Tasklane};

impl Tasklane {
    /// Reserves `units` (the request's `max_tokens`, or the type's estimate) of the
    /// budget that pays for `task` (its usage subject's, else its app's background
    /// budget) for the attempt it holds, until the attempt's usage is charged.
    ///
    /// `Err(ServiceError::Refused(refusal))` with `refusal.code ==
    /// RefusalCode::BudgetExhausted`: the budget is spent (counting what in-flight
    /// attempts reserved); do not call the provider, fail the attempt permanently with
    /// the stable code `budget_exhausted`. `LeaseLost` / `TaskGone`: stop, as after a
    /// heartbeat. A database error: do not call either (retry the attempt).
    pub async fn reserve_budget(&self, task: &ClaimedTask, units: i64) -> Result<(), ServiceError> {
        let _ = (task, units);
        Ok(())
    }
}
