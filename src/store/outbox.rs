//! The notification outbox as the deliverer sees it: claim due rows with where and how
//! to send them (a short claim that runs out by itself), read the tasks' views, record
//! a round's outcomes fenced on their claims, disable an endpoint after a 410, prune the
//! delivered log. Rows are written in the transaction that makes a task terminal: the
//! batch complete (`tasklane.complete_tasks_claiming`) writes the success notifications
//! of the tasks it settles and may claim them for its replica's deliverer
//! (`webhooks::handoff`), so those arrive without their targets, read by [`targets`];
//! the mirror's trigger function (`tasklane.sync_task_queue`) writes those of every
//! other terminal move. The deliverer's statements are prepared once per connection
//! (deadpool's statement cache): it runs them every round.

use crate::store::Statements;
use std::collections::HashMap;
use std::time::Duration;

use super::cached::Cached;
use chrono::{DateTime, Utc};
use tokio_postgres::GenericClient;
use uuid::Uuid;

use super::DbError;
use crate::task::record::TaskRecord;

/// The channel the outbox's writers NOTIFY when they write notifications left unclaimed
/// (the mirror's trigger once per statement; the batch complete per row, which
/// PostgreSQL folds into one per transaction).
pub const WEBHOOKS_CHANNEL: &str = "tasklane_webhooks";

/// A notification claimed for one attempt, with where and how to send it.
#[derive(Debug, Clone)]
pub struct Claimed {
    /// Also the `webhook-id`.
    pub id: Uuid,
    pub endpoint_id: Uuid,
    pub task_id: Uuid,
    pub event: String,
    /// When the task became terminal.
    pub created_at: DateTime<Utc>,
    /// This attempt's number (1-based).
    pub attempts: i32,
    /// The fencing token of this attempt's outcome.
    pub claim_token: Uuid,
    pub target: Target,
}

/// What [`claim`] may take.
#[derive(Debug, Clone)]
pub struct ClaimLimits {
    pub max: i64,
    /// Rows an endpoint that `allowance` does not list may take.
    pub default_allowance: i64,
    /// How long a claim holds before another deliverer may send the row.
    pub claim_for: Duration,
    /// `(endpoint, rows)`: what the listed endpoints may take (their window less the
    /// rows this replica holds of them, in flight or waiting for a slot).
    pub allowance: Vec<(Uuid, i64)>,
}

/// What a claim took, and where the rows still to send begin.
#[derive(Debug, Clone)]
pub struct Claim {
    pub rows: Vec<Claimed>,
    /// The earliest pending row at or after the claim's start, due or not, claimed or
    /// not (the rows just claimed included); `None` when there is none.
    pub pending_from: Option<DateTime<Utc>>,
    /// The database's clock at the claim (`None` only if the statement returned no
    /// row, which it does not: it returns one of NULLs when it claims nothing).
    pub clock: Option<DateTime<Utc>>,
}

/// Claims due notifications with their targets, reading the due index from `from`
/// (`None`: from its front; see `sql/webhook_claim.sql`). The statement is prepared
/// once per connection: the deliverer runs it every round.
pub async fn claim<C: Cached>(
    client: &C,
    limits: &ClaimLimits,
    from: Option<DateTime<Utc>>,
) -> Result<Claim, DbError> {
    let (endpoints, rows): (Vec<Uuid>, Vec<i64>) = limits.allowance.iter().copied().unzip();
    let rows = client
        .cached_rows(
            include_str!("../../sql/webhook_claim.sql"),
            &[
                &limits.max,
                &limits.default_allowance,
                &limits.claim_for.as_secs_f64(),
                &endpoints,
                &rows,
                &from,
            ],
        )
        .await?;
    let (pending_from, clock) = match rows.first() {
        Some(row) => (row.try_get("pending_from")?, Some(row.try_get("clock")?)),
        None => (None, None),
    };
    let rows = rows
        .iter()
        .filter_map(|row| match row.try_get::<_, Option<Uuid>>("id") {
            Ok(Some(id)) => Some(claimed(row, id)),
            Ok(None) => None,
            Err(error) => Some(Err(error)),
        })
        .collect::<Result<_, DbError>>()?;
    Ok(Claim {
        rows,
        pending_from,
        clock,
    })
}

fn claimed(row: &tokio_postgres::Row, id: Uuid) -> Result<Claimed, DbError> {
    Ok(Claimed {
        id,
        endpoint_id: row.try_get("endpoint_id")?,
        task_id: row.try_get("task_id")?,
        event: row.try_get("event")?,
        created_at: row.try_get("created_at")?,
        attempts: row.try_get("attempts")?,
        claim_token: row.try_get("claim_token")?,
        target: Target {
            url: row.try_get("url")?,
            disabled: row.try_get("disabled")?,
            secrets: row.try_get("secrets")?,
        },
    })
}

/// Where and how an endpoint is sent to.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: String,
    pub disabled: bool,
    /// Live secrets, current first.
    pub secrets: Vec<String>,
}

/// Where and how to send to the endpoints `endpoint_ids` (a deleted one is absent):
/// for the rows a replica's own batch complete claimed (`webhooks::handoff`), which the
/// settle returns without their targets.
pub async fn targets<C: Cached>(
    client: &C,
    endpoint_ids: &[Uuid],
) -> Result<HashMap<Uuid, Target>, DbError> {
    let rows = client
        .cached_rows(
            include_str!("../../sql/webhook_targets.sql"),
            &[&endpoint_ids],
        )
        .await?;
    rows.iter()
        .map(|row| {
            Ok((
                row.try_get("id")?,
                Target {
                    url: row.try_get("url")?,
                    disabled: row.try_get("disabled")?,
                    secrets: row.try_get("secrets")?,
                },
            ))
        })
        .collect()
}

/// The tasks `task_ids` as their views (a deleted task is absent).
pub async fn tasks<C: Cached>(
    client: &C,
    task_ids: &[Uuid],
) -> Result<HashMap<Uuid, TaskRecord>, DbError> {
    let rows = client
        .cached_rows(include_str!("../../sql/webhook_tasks.sql"), &[&task_ids])
        .await?;
    rows.iter()
        .map(|row| TaskRecord::from_row(row).map(|task| (task.id, task)))
        .collect()
}

/// An attempt's outcome.
#[derive(Debug, Clone, PartialEq)]
pub enum Settlement {
    /// 2xx.
    Delivered { status: u16 },
    /// Try again after `after`.
    Retry {
        after: Duration,
        status: Option<u16>,
        error: Option<String>,
    },
    /// No more attempts.
    Failed {
        status: Option<u16>,
        error: Option<String>,
    },
    /// Not sent: its turn came too late to finish within its claim, or its replica shut
    /// down first. Due again at once; the attempt its claim counted is taken back.
    Released,
}

/// What [`settle_many`] writes for `settlement`: status, delay in ms, HTTP status, error.
fn columns(settlement: &Settlement) -> (&'static str, f64, Option<i32>, Option<String>) {
    let (state, delay, status, error) = match settlement {
        Settlement::Delivered { status } => ("delivered", 0.0, Some(*status), None),
        Settlement::Retry {
            after,
            status,
            error,
        } => (
            "pending",
            after.as_secs_f64() * 1000.0,
            *status,
            error.clone(),
        ),
        Settlement::Failed { status, error } => ("failed", 0.0, *status, error.clone()),
        Settlement::Released => ("released", 0.0, None, None),
    };
    let error = error.map(|e| crate::task::bounds::truncate(&e, 1024).to_owned());
    (state, delay, status.map(i32::from), error)
}

/// Records a round of outcomes `(id, claim_token, settlement)` in one statement;
/// returns how many claims held.
pub async fn settle_many<C: Cached>(
    client: &C,
    outcomes: &mut [(Uuid, Uuid, Settlement)],
) -> Result<u64, DbError> {
    if outcomes.is_empty() {
        return Ok(0);
    }
    outcomes.sort_by_key(|(id, _, _)| *id);
    let mut ids = Vec::with_capacity(outcomes.len());
    let mut tokens = Vec::with_capacity(outcomes.len());
    let mut states = Vec::with_capacity(outcomes.len());
    let mut delays = Vec::with_capacity(outcomes.len());
    let mut statuses = Vec::with_capacity(outcomes.len());
    let mut errors = Vec::with_capacity(outcomes.len());
    for (id, token, settlement) in outcomes.iter() {
        let (state, delay, status, error) = columns(settlement);
        ids.push(*id);
        tokens.push(*token);
        states.push(state);
        delays.push(delay);
        statuses.push(status);
        errors.push(error);
    }
    let rows = client
        .cached_rows(
            include_str!("../../sql/webhook_settle_many.sql"),
            &[&ids, &tokens, &states, &delays, &statuses, &errors],
        )
        .await?;
    Ok(rows.len() as u64)
}

/// Disables endpoint `endpoint_id` (a 410) and fails its pending notifications;
/// returns how many failed.
pub async fn disable_endpoint<C: GenericClient + Sync>(
    client: &C,
    endpoint_id: Uuid,
) -> Result<i64, DbError> {
    let row = client
        .row(
            include_str!("../../sql/webhook_endpoint_disable.sql"),
            &[&endpoint_id],
        )
        .await?;
    row.try_get("failed")
}

/// Deletes at most `limit` delivered or failed notifications finished longer than
/// `retention` ago, whose ids are at or after `from` when given.
pub async fn prune<C: GenericClient + Sync>(
    client: &C,
    retention: Duration,
    limit: i64,
    from: Option<uuid::Uuid>,
) -> Result<super::prune::Pruned<uuid::Uuid>, DbError> {
    let row = client
        .row(
            include_str!("../../sql/webhook_prune.sql"),
            &[&retention.as_secs_f64(), &limit, &from],
        )
        .await?;
    Ok(super::prune::Pruned {
        count: row.try_get::<_, i64>("pruned")? as u64,
        reached: row.try_get("reached")?,
    })
}

/// The webhooks line of the admin overview.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct WebhooksOverview {
    pub endpoints: i64,
    /// Disabled after a 410 (until the app PUTs them again).
    pub disabled_endpoints: i64,
    /// Notifications not yet delivered.
    pub pending: i64,
    /// Age of the oldest pending notification, in seconds (0 when none).
    pub oldest_pending_seconds: i64,
    /// Notifications that ran out of attempts, still in the log.
    pub failed: i64,
}

/// Reads [`WebhooksOverview`], counting the pending rows from `pending_from` in the due
/// index (the deliverer's start: no pending row is behind it but one written late), or
/// from its front.
pub async fn overview<C: GenericClient + Sync>(
    client: &C,
    pending_from: Option<DateTime<Utc>>,
) -> Result<WebhooksOverview, DbError> {
    let row = client
        .row(
            include_str!("../../sql/webhook_overview.sql"),
            &[&pending_from],
        )
        .await?;
    Ok(WebhooksOverview {
        endpoints: row.try_get("endpoints")?,
        disabled_endpoints: row.try_get("disabled")?,
        pending: row.try_get("pending")?,
        oldest_pending_seconds: row.try_get("oldest_pending_seconds")?,
        failed: row.try_get("failed")?,
    })
}
