//! Writes by the worker holding a lease: heartbeat and settlement. Every statement is
//! fenced on `(id, lease_token, state)`, the batch heartbeat on `(id, lease_token)`
//! alone: a CHECK constraint keeps a token only on a running or cancelling task, and a
//! state test there makes the plan quadratic. Zero rows is [`LeaseError::Lost`] or
//! [`LeaseError::Gone`], never "not found".

use crate::store::Statements;
use std::time::Duration;

use tokio_postgres::GenericClient;
use uuid::Uuid;

use super::attempts::FactColumns;
use super::DbError;
use crate::task::attempt::Facts;
use crate::task::backoff::Backoff;
use crate::task::lease::{Beat, BeatAnswer, Lease, LeaseStatus};
use crate::task::outcome::Outcome;
use crate::task::settlement::{self, Leased, Report, Rules};
use crate::task::settlement::{Reported, Success};
use crate::task::{Locality, Privacy, TaskState};

#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// Another claim or a settlement moved the task on: the worker must stop.
    #[error("the lease was lost")]
    Lost,
    /// The task was deleted: the worker must stop.
    #[error("the task is gone")]
    Gone,
    /// The report does not fit the task's state (a cancel acknowledged that was never
    /// requested).
    #[error(transparent)]
    Illegal(#[from] crate::task::state::IllegalTransition),
    #[error(transparent)]
    Db(#[from] DbError),
}

/// Extends the lease and records progress, phase, snapshot and events. A change of
/// progress or phase is reported as a `task.progress` event.
pub async fn heartbeat<C: GenericClient + Sync>(
    client: &C,
    id: Uuid,
    lease_token: Uuid,
    beat: &Beat,
) -> Result<BeatAnswer, LeaseError> {
    let mut events = Vec::with_capacity(beat.events.len() + 1);
    if beat.progress.is_some() || beat.phase.is_some() {
        let data = serde_json::json!({"progress": beat.progress, "phase": beat.phase});
        events.push(serde_json::json!({"type": "task.progress", "data": data}));
    }
    events.extend(beat.events.iter().cloned());
    let events = serde_json::Value::Array(events);
    let row = client
        .row_opt(
            include_str!("../../sql/heartbeat.sql"),
            &[
                &id,
                &lease_token,
                &beat.progress,
                &beat.phase,
                &beat.snapshot,
                &events,
            ],
        )
        .await?;
    let Some(row) = row else {
        return Err(probe(client, id).await);
    };
    let state: &str = row.try_get("state")?;
    Ok(BeatAnswer {
        lease_expires_at: row.try_get("lease_expires_at")?,
        attempt: row.try_get("attempt")?,
        cancel_requested: state == TaskState::Cancelling.as_str(),
    })
}

/// Extends every lease of `leases` in one statement (no event rows), answering each
/// lease's status in the order given. The rows are locked in id order whatever the
/// order given.
pub async fn extend_many<C: GenericClient + Sync>(
    client: &C,
    leases: &[Lease],
) -> Result<Vec<LeaseStatus>, DbError> {
    let mut sorted = leases.to_vec();
    sorted.sort_unstable();
    let ids: Vec<Uuid> = sorted.iter().map(|l| l.id).collect();
    let tokens: Vec<Uuid> = sorted.iter().map(|l| l.lease_token).collect();
    let rows = client
        .rows(
            include_str!("../../sql/heartbeat_many.sql"),
            &[&ids, &tokens],
        )
        .await?;
    let mut extended = std::collections::HashMap::with_capacity(rows.len());
    for row in rows {
        let id: Uuid = row.try_get("id")?;
        let state: &str = row.try_get("state")?;
        extended.insert(id, state == "cancelling");
    }
    Ok(leases
        .iter()
        .map(|l| match extended.get(&l.id) {
            Some(&cancel_requested) => LeaseStatus::Extended { cancel_requested },
            None => LeaseStatus::Lost,
        })
        .collect())
}

/// Settles the task as succeeded (also when cancellation was requested meanwhile: the
/// work is done), writing its attempt row and charging its usage. Past the attempt's
/// deadline the lease is lost: the attempt is timed out by the server.
pub async fn complete<C: GenericClient + Sync>(
    client: &C,
    id: Uuid,
    lease_token: Uuid,
    success: &Success,
) -> Result<(), LeaseError> {
    let facts = FactColumns::of(&success.facts);
    let row = client
        .row_opt(
            include_str!("../../sql/complete.sql"),
            &[
                &id,
                &lease_token,
                &success.result,
                &success.usage_units,
                &facts.provider,
                &facts.model,
                &facts.route,
                &facts.route_name,
                &facts.input_tokens,
                &facts.output_tokens,
                &facts.total_tokens,
                &facts.response_model,
                &facts.system_fingerprint,
            ],
        )
        .await?;
    match row {
        Some(_) => Ok(()),
        None => Err(probe(client, id).await),
    }
}

/// Settles the task by a worker's report, in its own transaction: the row is locked,
/// the decision taken by `task::settlement::settle`, and the move written with its event
/// and the attempt's row (no facts). `backoff` is the task type's. Given a
/// transaction, it runs in a savepoint of it.
pub async fn settle<C: GenericClient + Sync>(
    client: &mut C,
    id: Uuid,
    lease_token: Uuid,
    report: Report,
    backoff: &Backoff,
) -> Result<TaskState, LeaseError> {
    let reported = Reported {
        report,
        facts: Facts::default(),
        usage_units: None,
    };
    let rules = Rules {
        backoff,
        circuit_wait: Duration::from_secs(crate::task::task_type::DEFAULT_CIRCUIT_WAIT_SECONDS),
    };
    Ok(settle_with(client, id, lease_token, reported, rules)
        .await?
        .state)
}

/// What a settlement wrote: the task's new state and, when it waits for a retry, how
/// long until it is claimable again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settled {
    pub state: TaskState,
    pub claimable_in: Option<Duration>,
}

/// [`settle`] with the attempt's facts and the type's rules. An attempt past its
/// server-side deadline ends as timed out whatever the report says (its facts are
/// kept).
pub async fn settle_with<C: GenericClient + Sync>(
    client: &mut C,
    id: Uuid,
    lease_token: Uuid,
    reported: Reported,
    rules: Rules<'_>,
) -> Result<Settled, LeaseError> {
    let tx = client.transaction().await?;
    let Some(row) = tx
        .row_opt(
            include_str!("../../sql/lease_lock.sql"),
            &[&id, &lease_token],
        )
        .await?
    else {
        let error = probe(&tx, id).await;
        return Err(error);
    };
    let state: &str = row.try_get("state")?;
    let route: Option<&str> = row.try_get("route")?;
    let leased = Leased {
        state: state.parse().expect("tasks.state holds a known state"),
        attempt: row.try_get::<_, i32>("attempt")? as u32,
        max_attempts: row.try_get::<_, i32>("max_attempts")? as u32,
        privacy: Privacy::parse(row.try_get("privacy")?).unwrap_or(Privacy::LocalOnly),
        locality: if route == Some("external") {
            Locality::External
        } else {
            Locality::Local
        },
        circuit_waited: Duration::from_secs_f64(row.try_get::<_, f64>("circuit_waited")?.max(0.0)),
    };
    let report = if row.try_get("overdue")? {
        Report::TimedOut
    } else {
        reported.report
    };
    let timed_out = report == Report::TimedOut;
    let settlement = settlement::settle(leased, report, rules)?;
    let outcome = Outcome::of_settlement(timed_out, settlement.state);
    let delay_ms = settlement.delay.map(|d| d.as_millis() as i64);
    let facts = FactColumns::of(&reported.facts);
    tx.run(
        include_str!("../../sql/settle.sql"),
        &[
            &id,
            &lease_token,
            &settlement.state.as_str(),
            &settlement.code,
            &settlement.message,
            &delay_ms,
            &outcome.as_str(),
            &facts.route,
            &facts.route_name,
            &facts.provider,
            &facts.model,
            &facts.input_tokens,
            &facts.output_tokens,
            &facts.total_tokens,
            &reported.usage_units,
            &settlement.attempt_code,
            &settlement.deferred,
            &facts.response_model,
            &facts.system_fingerprint,
        ],
    )
    .await?;
    tx.commit().await?;
    Ok(Settled {
        state: settlement.state,
        claimable_in: settlement.delay,
    })
}

/// Why a fenced write matched nothing.
async fn probe<C: GenericClient + Sync>(client: &C, id: Uuid) -> LeaseError {
    match client
        .row_opt(include_str!("../../sql/lease_probe.sql"), &[&id])
        .await
    {
        Ok(Some(_)) => LeaseError::Lost,
        Ok(None) => LeaseError::Gone,
        Err(error) => LeaseError::Db(error),
    }
}
