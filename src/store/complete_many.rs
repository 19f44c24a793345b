//! Batched success settlement: many fenced completions in one statement
//! (`sql/complete_many.sql`, which calls `tasklane.complete_tasks_claiming`, a function
//! planned once per connection), each task still learning its own outcome, and the
//! notifications it writes claimed for this replica's deliverer when asked
//! (`webhooks::handoff`). This is the store half of the worker's group commit
//! (`worker::completer`); the per-task [`super::lease::complete`] stays the reference
//! behaviour it must match.
//!
//! The functions take deadpool's client so the statements are prepared once per
//! connection (`prepare_cached`): on the hot path a completion costs one round trip.

use std::collections::HashSet;
use std::time::Duration;

use super::cached::Cached;
use uuid::Uuid;

use super::attempts::FactColumns;
use super::lease::LeaseError;
use super::DbError;
use crate::task::settlement::Completion;

/// How the notifications a batch complete writes are claimed for the caller's deliverer.
#[derive(Debug, Clone, Copy)]
pub struct NotificationClaim<'a> {
    /// Every claimed row's claim token.
    pub token: Uuid,
    /// How long the claim holds.
    pub claim_for: Duration,
    /// Endpoints whose rows are left unclaimed.
    pub busy: &'a [Uuid],
}

/// A notification the settle claimed.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimedNotification {
    /// Also the `webhook-id`.
    pub id: Uuid,
    pub endpoint_id: Uuid,
    pub task_id: Uuid,
    /// When the task became terminal.
    pub created_at: chrono::DateTime<chrono::Utc>,
}

/// What a batch complete answers.
#[derive(Debug)]
pub struct CompletedBatch {
    /// Per completion, in `batch` order.
    pub answers: Vec<Result<(), LeaseError>>,
    /// The notifications claimed for the caller (none without a claim).
    pub claimed: Vec<ClaimedNotification>,
}

/// Settles every completion of `batch` as succeeded in one statement (one transaction)
/// and answers, in `batch` order, what [`super::lease::complete`] would have answered
/// for each: `Ok`, [`LeaseError::Lost`] or [`LeaseError::Gone`]; with `claim`, the
/// notifications it wrote are claimed for the caller and returned (except its busy
/// endpoints'). Sort `batch` by id first when batches may run concurrently (lock
/// order). An `Err` means nothing of the batch was written.
pub async fn complete_many<C: Cached>(
    client: &C,
    batch: &[Completion],
    claim: Option<NotificationClaim<'_>>,
) -> Result<CompletedBatch, DbError> {
    let ids: Vec<Uuid> = batch.iter().map(|c| c.id).collect();
    let tokens: Vec<Uuid> = batch.iter().map(|c| c.lease_token).collect();
    let results: Vec<&serde_json::Value> = batch.iter().map(|c| &c.success.result).collect();
    let units: Vec<Option<i64>> = batch.iter().map(|c| c.success.usage_units).collect();
    let facts: Vec<FactColumns> = batch
        .iter()
        .map(|c| FactColumns::of(&c.success.facts))
        .collect();
    let providers: Vec<Option<&str>> = facts.iter().map(|f| f.provider).collect();
    let models: Vec<Option<&str>> = facts.iter().map(|f| f.model).collect();
    let routes: Vec<Option<&str>> = facts.iter().map(|f| f.route).collect();
    let route_names: Vec<Option<&str>> = facts.iter().map(|f| f.route_name).collect();
    let inputs: Vec<Option<i64>> = facts.iter().map(|f| f.input_tokens).collect();
    let outputs: Vec<Option<i64>> = facts.iter().map(|f| f.output_tokens).collect();
    let totals: Vec<Option<i64>> = facts.iter().map(|f| f.total_tokens).collect();
    let response_models: Vec<Option<&str>> = facts.iter().map(|f| f.response_model).collect();
    let fingerprints: Vec<Option<&str>> = facts.iter().map(|f| f.system_fingerprint).collect();
    let claim_token = claim.map(|c| c.token);
    let claim_seconds = claim.map_or(0.0, |c| c.claim_for.as_secs_f64());
    let busy = claim.map_or(&[][..], |c| c.busy);
    let rows = client
        .cached_rows(
            include_str!("../../sql/complete_many.sql"),
            &[
                &ids,
                &tokens,
                &results,
                &units,
                &providers,
                &models,
                &routes,
                &route_names,
                &inputs,
                &outputs,
                &totals,
                &response_models,
                &fingerprints,
                &claim_token,
                &claim_seconds,
                &busy,
            ],
        )
        .await?;
    // Keyed by (id, token): a stale attempt and the fresh one of the same task may share
    // a batch, and only the fresh one's write matches.
    let mut settled: HashSet<(Uuid, Uuid)> = HashSet::with_capacity(batch.len());
    let mut claimed = Vec::new();
    for row in &rows {
        let id: Uuid = row.try_get("id")?;
        match row.try_get::<_, Option<Uuid>>("delivery_id")? {
            None => {
                settled.insert((id, row.try_get("lease_token")?));
            }
            Some(delivery) => claimed.push(ClaimedNotification {
                id: delivery,
                endpoint_id: row.try_get("endpoint_id")?,
                task_id: id,
                created_at: row.try_get("created_at")?,
            }),
        }
    }
    if settled.len() == batch.len() {
        return Ok(CompletedBatch {
            answers: batch.iter().map(|_| Ok(())).collect(),
            claimed,
        });
    }
    // Some writes matched nothing: tell lost leases from deleted tasks, as one query.
    let missing: Vec<Uuid> = batch
        .iter()
        .filter(|c| !settled.contains(&(c.id, c.lease_token)))
        .map(|c| c.id)
        .collect();
    let rows = client
        .cached_rows(include_str!("../../sql/lease_probe_many.sql"), &[&missing])
        .await?;
    let existing: HashSet<Uuid> = rows
        .iter()
        .map(|row| row.try_get("id"))
        .collect::<Result<_, _>>()?;
    let answers = batch
        .iter()
        .map(|c| {
            match (
                settled.contains(&(c.id, c.lease_token)),
                existing.contains(&c.id),
            ) {
                (true, _) => Ok(()),
                (false, true) => Err(LeaseError::Lost),
                (false, false) => Err(LeaseError::Gone),
            }
        })
        .collect();
    Ok(CompletedBatch { answers, claimed })
}
