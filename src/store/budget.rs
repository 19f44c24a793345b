//! Budget reservations of in-flight attempts (`tasklane.reserve_budget`): what an
//! attempt may consume is reserved before it calls a provider, so the budgets it draws
//! on are not overshot by attempts that all found room at once.

use crate::store::Statements;
use chrono::{DateTime, Utc};
use tokio_postgres::GenericClient;
use uuid::Uuid;

use super::DbError;

/// What the database decided for one reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reservation {
    /// Reserved against budget `limit_id`; counts until the attempt ends.
    Reserved { limit_id: i64 },
    /// No budget applies to the task: nothing was written.
    Unlimited,
    /// Spent (today's usage plus in-flight reservations reach the max), decided at `at`.
    Exhausted { limit_id: i64, at: DateTime<Utc> },
    /// The lease is no longer the attempt's.
    LeaseLost,
    /// The task was deleted.
    TaskGone,
}

/// Reserves `units` for the attempt holding `lease_token` on task `id`.
pub async fn reserve<C: GenericClient + Sync>(
    client: &C,
    id: Uuid,
    lease_token: Uuid,
    units: i64,
) -> Result<Reservation, DbError> {
    let row = client
        .row(
            include_str!("../../sql/budget_reserve.sql"),
            &[&id, &lease_token, &units],
        )
        .await?;
    let outcome: &str = row.try_get("outcome")?;
    Ok(Reservation::from_answer(
        outcome,
        row.try_get("limit_id")?,
        row.try_get("at")?,
    ))
}

impl Reservation {
    /// The reservation `tasklane.reserve_budget` answered with `outcome`, `limit_id`
    /// and `at` (also read from `sql/call_start.sql`, which carries them as JSON).
    pub fn from_answer(outcome: &str, limit_id: Option<i64>, at: DateTime<Utc>) -> Reservation {
        match (outcome, limit_id) {
            ("reserved", Some(limit_id)) => Reservation::Reserved { limit_id },
            ("budget_exhausted", Some(limit_id)) => Reservation::Exhausted { limit_id, at },
            ("unlimited", _) => Reservation::Unlimited,
            ("lease_lost", _) => Reservation::LeaseLost,
            ("task_gone", _) => Reservation::TaskGone,
            (other, _) => unreachable!("tasklane.reserve_budget answered {other:?}"),
        }
    }
}
