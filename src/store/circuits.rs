//! The circuit breakers' rows (`tasklane.circuits`): one read per permit (at a
//! call's start folded with the probe and the budget reservation into one statement,
//! [`start_call`]), and one atomic statement per change (count a failure, take the
//! probe, end the probe, reset a count, an operator's reset). What each means is
//! decided in `task::circuit`.

use crate::store::Statements;
use chrono::{DateTime, Utc};
use tokio_postgres::{GenericClient, Row};
use uuid::Uuid;

use super::budget::Reservation;
use super::DbError;
use crate::task::circuit::CircuitRow;

/// One circuit as the admin routes show it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct Circuit {
    pub route_name: String,
    /// `closed`, `open` or `half_open` (the open time is over: one probe may go).
    #[schema(example = "open")]
    pub state: String,
    pub consecutive_failures: i32,
    /// When it last opened; null while closed.
    pub opened_at: Option<DateTime<Utc>>,
    /// When a call may next go through (the end of the open time, or of the probe in
    /// flight); null while closed.
    pub retry_at: Option<DateTime<Utc>>,
}

fn circuit_row(row: &Row) -> Result<CircuitRow, DbError> {
    let failures: i32 = row.try_get("consecutive_failures")?;
    Ok(CircuitRow {
        consecutive_failures: u32::try_from(failures).unwrap_or(0),
        opened_at: row.try_get("opened_at")?,
        retry_at: row.try_get("retry_at")?,
        probe_until: row.try_get("probe_until")?,
    })
}

/// The row of `route_name`'s circuit with the database's time; None: closed, nothing
/// counted.
pub async fn read<C: GenericClient + Sync>(
    client: &C,
    route_name: &str,
) -> Result<Option<(CircuitRow, DateTime<Utc>)>, DbError> {
    let row = client
        .row_opt(include_str!("../../sql/circuit_read.sql"), &[&route_name])
        .await?;
    row.map(|row| Ok((circuit_row(&row)?, row.try_get("now")?)))
        .transpose()
}

/// Tries to take the one probe for `lease_seconds`; false if another caller has it
/// or the circuit is no longer open past its time.
pub async fn take_probe<C: GenericClient + Sync>(
    client: &C,
    route_name: &str,
    lease_seconds: u32,
) -> Result<bool, DbError> {
    let row = client
        .row_opt(
            include_str!("../../sql/circuit_probe.sql"),
            &[&route_name, &f64::from(lease_seconds)],
        )
        .await?;
    Ok(row.is_some())
}

/// Counts a transient failure; true if this failure opened the circuit.
pub async fn count_failure<C: GenericClient + Sync>(
    client: &C,
    route_name: &str,
    threshold: u32,
    open_seconds: u32,
) -> Result<bool, DbError> {
    let threshold = i32::try_from(threshold.max(1)).unwrap_or(i32::MAX);
    let row = client
        .row(
            include_str!("../../sql/circuit_failure.sql"),
            &[&route_name, &threshold, &f64::from(open_seconds)],
        )
        .await?;
    row.try_get("opened")
}

/// A success on a closed circuit with counted failures: the count starts again.
pub async fn reset_failures<C: GenericClient + Sync>(
    client: &C,
    route_name: &str,
) -> Result<(), DbError> {
    client
        .run(
            include_str!("../../sql/circuit_success.sql"),
            &[&route_name],
        )
        .await?;
    Ok(())
}

/// The probe ended: closed on success, open again for `open_seconds` on failure.
pub async fn end_probe<C: GenericClient + Sync>(
    client: &C,
    route_name: &str,
    succeeded: bool,
    open_seconds: u32,
) -> Result<(), DbError> {
    client
        .run(
            include_str!("../../sql/circuit_probe_result.sql"),
            &[&route_name, &succeeded, &f64::from(open_seconds)],
        )
        .await?;
    Ok(())
}

/// Every circuit with a row, by route name.
pub async fn list<C: GenericClient + Sync>(client: &C) -> Result<Vec<Circuit>, DbError> {
    let rows = client
        .rows(include_str!("../../sql/circuit_list.sql"), &[])
        .await?;
    rows.iter()
        .map(|row| {
            let now: DateTime<Utc> = row.try_get("now")?;
            let circuit = circuit_row(row)?;
            Ok(Circuit {
                route_name: row.try_get("route_name")?,
                state: circuit.state(now).as_str().to_owned(),
                consecutive_failures: row.try_get("consecutive_failures")?,
                opened_at: circuit.opened_at,
                retry_at: circuit.next_try(now),
            })
        })
        .collect()
}

/// Closes `route_name`'s circuit (deletes its row); false if it had none.
pub async fn reset<C: GenericClient + Sync>(client: &C, route_name: &str) -> Result<bool, DbError> {
    let row = client
        .row_opt(include_str!("../../sql/circuit_reset.sql"), &[&route_name])
        .await?;
    Ok(row.is_some())
}

/// What `sql/call_start.sql` answered for one call's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallStart {
    /// The circuit's row as the statement read it; None: no row (closed, no failures).
    pub row: Option<CircuitRow>,
    /// The database's clock.
    pub now: DateTime<Utc>,
    /// This caller took the circuit's one probe.
    pub probe_taken: bool,
    /// The budget's answer, when asked for and the call may go (closed, or probing).
    pub reservation: Option<Reservation>,
}

/// The start of a call to `route_name` in one round trip: reads the circuit, takes its
/// probe if its open time is over (for `probe_seconds`) and, when `reserve` names
/// units and the call may go, reserves them for the attempt holding `lease_token` on
/// task `id`. Prepared once per connection.
pub async fn start_call<C: super::cached::Cached>(
    client: &C,
    route_name: &str,
    probe_seconds: u32,
    id: Uuid,
    lease_token: Uuid,
    reserve: Option<i64>,
) -> Result<CallStart, DbError> {
    let row = client
        .cached_row(
            include_str!("../../sql/call_start.sql"),
            &[
                &route_name,
                &f64::from(probe_seconds),
                &id,
                &lease_token,
                &reserve.unwrap_or(0),
                &reserve.is_some(),
            ],
        )
        .await?;
    let failures: Option<i32> = row.try_get("consecutive_failures")?;
    let circuit = match failures {
        None => None,
        Some(_) => Some(circuit_row(&row)?),
    };
    let reservation = row
        .try_get::<_, Option<serde_json::Value>>("reservation")?
        .map(|answer| reservation_of(&answer));
    Ok(CallStart {
        row: circuit,
        now: row.try_get("now")?,
        probe_taken: row.try_get("probe_taken")?,
        reservation,
    })
}

/// `tasklane.reserve_budget`'s answer from its JSON form (`to_jsonb` of its row).
fn reservation_of(answer: &serde_json::Value) -> Reservation {
    let outcome = answer["outcome"].as_str().unwrap_or_default();
    let limit_id = answer["limit_id"].as_i64();
    let at = answer["at"]
        .as_str()
        .and_then(|at| DateTime::parse_from_rfc3339(at).ok())
        .map_or_else(Utc::now, |at| at.with_timezone(&Utc));
    Reservation::from_answer(outcome, limit_id, at)
}
