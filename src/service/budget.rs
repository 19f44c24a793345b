//! The budget recheck before an attempt calls a model provider: a task admitted while
//! its budget had room may find it spent when it runs, and attempts that all found room
//! at once must not overshoot it together. So each provider call first reserves what it
//! may consume (`tasklane.reserve_budget`, see `docs/admission.md`): decided against
//! today's usage plus the reservations of the attempts still in flight, one reservation
//! of a budget at a time.

use super::{ClaimedTask, ServiceError, Tasklane};
use crate::admission::{Refusal, RefusalCode};
use crate::store::budget::{self, Reservation};
use crate::task::bounds::Invalid;

impl Tasklane {
    /// Reserves `units` (the request's `max_tokens`, or the type's estimate) of the
    /// budget that pays for `task` (its usage subject's budget, else its app's
    /// background budget: the one admission checked) for the attempt it holds. The
    /// reservation counts until that attempt ends (its settle charges the real usage in
    /// the same transaction), so nothing has to give it back. A task no budget applies
    /// to costs two index reads and writes nothing. Call it before each provider call
    /// of the attempt (a second call's units add to the first's). An executor that also
    /// asks a route's circuit folds both into one round trip with
    /// [`Tasklane::start_call`].
    ///
    /// `Err(ServiceError::Refused(refusal))` with `refusal.code ==
    /// RefusalCode::BudgetExhausted` (`retry_after`: until the next UTC day): today's
    /// usage plus in-flight reservations reach the budget; do not call the provider,
    /// fail the attempt permanently with the stable code `budget_exhausted`.
    /// `LeaseLost` / `TaskGone`: stop, as after a heartbeat. `Invalid`: negative
    /// `units`. A database error: do not call either (retry the attempt).
    pub async fn reserve_budget(&self, task: &ClaimedTask, units: i64) -> Result<(), ServiceError> {
        if units < 0 {
            return Err(Invalid::new("units", "must be at least 0").into());
        }
        let client = self.connection().await?;
        let reservation = budget::reserve(
            crate::store::client(&client),
            task.id,
            task.lease_token,
            units,
        )
        .await?;
        answer(reservation)
    }
}

/// What a reservation means to the attempt: room (or no budget), or why not to call.
pub(super) fn answer(reservation: Reservation) -> Result<(), ServiceError> {
    match reservation {
        Reservation::Reserved { .. } | Reservation::Unlimited => Ok(()),
        Reservation::Exhausted { limit_id, at } => Err(ServiceError::Refused(Refusal::new(
            RefusalCode::BudgetExhausted,
            Some(limit_id),
            at,
            None,
        ))),
        Reservation::LeaseLost => Err(ServiceError::LeaseLost),
        Reservation::TaskGone => Err(ServiceError::TaskGone),
    }
}
