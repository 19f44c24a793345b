//! Batched success settlement: many fenced completions in one statement
//! (`sql/complete_many.sql`, which calls `tasklane.complete_tasks`, V26: planned once
//! per connection), each task still learning its own outcome. This is the
//! store half of the worker's group commit (`worker::completer`); the per-task
//! [`super::lease::complete`] stays the reference behaviour it must match.
//!
//! The functions take deadpool's client so the statements are prepared once per
//! connection (`prepare_cached`): on the hot path a completion costs one round trip.

use std::collections::HashSet;

use deadpool_postgres::GenericClient;
use uuid::Uuid;

use super::attempts::FactColumns;
use super::lease::{LeaseError, Success};
use super::DbError;

/// One completion of a batch.
#[derive(Debug, Clone)]
pub struct Completion {
    pub id: Uuid,
    pub lease_token: Uuid,
    pub success: Success,
}

/// Settles every completion of `batch` as succeeded in one statement (one transaction)
/// and answers, in `batch` order, what [`super::lease::complete`] would have answered
/// for each: `Ok`, [`LeaseError::Lost`] or [`LeaseError::Gone`]. Sort `batch` by id
/// first when batches may run concurrently (lock order). An `Err` means nothing of the
/// batch was written.
pub async fn complete_many<C: GenericClient>(
    client: &C,
    batch: &[Completion],
) -> Result<Vec<Result<(), LeaseError>>, DbError> {
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
    let statement = client
        .prepare_cached(include_str!("../../sql/complete_many.sql"))
        .await?;
    let rows = client
        .query(
            &statement,
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
            ],
        )
        .await?;
    // Keyed by (id, token): a stale attempt and the fresh one of the same task may share
    // a batch, and only the fresh one's write matches.
    let settled: HashSet<(Uuid, Uuid)> = rows
        .iter()
        .map(|row| Ok((row.try_get("id")?, row.try_get("lease_token")?)))
        .collect::<Result<_, DbError>>()?;
    if settled.len() == batch.len() {
        return Ok(batch.iter().map(|_| Ok(())).collect());
    }
    // Some writes matched nothing: tell lost leases from deleted tasks, as one query.
    let missing: Vec<Uuid> = batch
        .iter()
        .filter(|c| !settled.contains(&(c.id, c.lease_token)))
        .map(|c| c.id)
        .collect();
    let probe = client
        .prepare_cached(include_str!("../../sql/lease_probe_many.sql"))
        .await?;
    let rows = client.query(&probe, &[&missing]).await?;
    let existing: HashSet<Uuid> = rows
        .iter()
        .map(|row| row.try_get("id"))
        .collect::<Result<_, _>>()?;
    Ok(batch
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
        .collect())
}
