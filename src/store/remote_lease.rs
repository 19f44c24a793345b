//! A remote worker's batched writes and the reads that fence its live output. Every
//! statement names the owner the worker's token speaks for, so a batch never touches
//! (nor reveals) another owner's task: such an item is answered as gone. An unmatched
//! item is told apart (lost lease or gone) by one probe for the whole batch.

use std::collections::{HashMap, HashSet};

use uuid::Uuid;

use super::lease::LeaseError;
use super::{DbError, Statements};
use crate::task::lease::BeatAnswer;
use crate::task::owner::Owner;
use crate::task::remote::{lock_order, BeatItem};
use crate::task::TaskState;

/// Extends the lease of every item of `items` (of `owner`'s tasks only) in one
/// statement, recording progress and snapshots; answers each item in the order given.
pub async fn heartbeat_batch<C: Statements>(
    client: &C,
    owner: &Owner,
    items: &[BeatItem],
) -> Result<Vec<Result<BeatAnswer, LeaseError>>, DbError> {
    let ids: Vec<Uuid> = items.iter().map(|i| i.id).collect();
    let order = lock_order(&ids);
    let sorted_ids: Vec<Uuid> = order.iter().map(|&n| items[n].id).collect();
    let tokens: Vec<Uuid> = order.iter().map(|&n| items[n].lease_token).collect();
    let progress: Vec<Option<i16>> = order.iter().map(|&n| items[n].progress).collect();
    let snapshots: Vec<Option<&serde_json::Value>> =
        order.iter().map(|&n| items[n].snapshot.as_ref()).collect();
    let rows = client
        .rows(
            include_str!("../../sql/heartbeat_batch.sql"),
            &[
                &sorted_ids,
                &tokens,
                &progress,
                &snapshots,
                &owner.app,
                &owner.scope_id,
            ],
        )
        .await?;
    let mut extended: HashMap<Uuid, BeatAnswer> = HashMap::with_capacity(rows.len());
    for row in rows {
        let state: &str = row.try_get("state")?;
        extended.insert(
            row.try_get("id")?,
            BeatAnswer {
                attempt: row.try_get("attempt")?,
                lease_expires_at: row.try_get("lease_expires_at")?,
                cancel_requested: state == TaskState::Cancelling.as_str(),
            },
        );
    }
    let missing: Vec<Uuid> = ids
        .iter()
        .filter(|id| !extended.contains_key(id))
        .copied()
        .collect();
    let existing = owned(client, owner, &missing).await?;
    Ok(ids
        .iter()
        .map(|id| match extended.get(id) {
            Some(answer) => Ok(*answer),
            None if existing.contains(id) => Err(LeaseError::Lost),
            None => Err(LeaseError::Gone),
        })
        .collect())
}

/// Which of `ids` exist and are `owner`'s (none looked up when `ids` is empty).
pub async fn owned<C: Statements>(
    client: &C,
    owner: &Owner,
    ids: &[Uuid],
) -> Result<HashSet<Uuid>, DbError> {
    if ids.is_empty() {
        return Ok(HashSet::new());
    }
    let rows = client
        .rows(
            include_str!("../../sql/lease_probe_owned.sql"),
            &[&ids, &owner.app, &owner.scope_id],
        )
        .await?;
    rows.iter().map(|row| row.try_get("id")).collect()
}

/// What a batched completion must know of a task before writing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletionCheck {
    pub task_type: String,
    /// The attempt's deadline passed: its completion is a lost lease.
    pub overdue: bool,
}

/// Of `ids`, those that exist and are `owner`'s, with what a completion checks.
pub async fn completion_checks<C: Statements>(
    client: &C,
    owner: &Owner,
    ids: &[Uuid],
) -> Result<HashMap<Uuid, CompletionCheck>, DbError> {
    let rows = client
        .rows(
            include_str!("../../sql/complete_check.sql"),
            &[&ids, &owner.app, &owner.scope_id],
        )
        .await?;
    rows.iter()
        .map(|row| {
            Ok((
                row.try_get("id")?,
                CompletionCheck {
                    task_type: row.try_get("task_type")?,
                    overdue: row.try_get("overdue")?,
                },
            ))
        })
        .collect()
}

/// Who holds task `id`'s lease, as a live output write asks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub app: String,
    pub scope_id: String,
    /// The task's current attempt.
    pub attempt: i32,
    /// The token given holds the lease.
    pub held: bool,
}

/// Whether `lease_token` holds task `id`'s lease (a read); `None` when the task is gone.
pub async fn holder<C: Statements>(
    client: &C,
    id: Uuid,
    lease_token: Uuid,
) -> Result<Option<Holder>, DbError> {
    let row = client
        .row_opt(
            include_str!("../../sql/lease_holder.sql"),
            &[&id, &lease_token],
        )
        .await?;
    row.map(|row| {
        Ok(Holder {
            app: row.try_get("app")?,
            scope_id: row.try_get("scope_id")?,
            attempt: row.try_get("attempt")?,
            held: row.try_get("held")?,
        })
    })
    .transpose()
}

/// Whether a lease of a batched output write holds, and of which attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Holding {
    /// The task's current attempt.
    pub attempt: i32,
    /// The token given holds the lease.
    pub held: bool,
}

/// Of the `(id, lease_token)` pairs, those of tasks that exist and are `owner`'s: whether
/// each token holds its task's lease (one read for the whole batch). An id missing from
/// the answer is gone, or another owner's.
pub async fn holdings<C: Statements>(
    client: &C,
    owner: &Owner,
    leases: &[(Uuid, Uuid)],
) -> Result<HashMap<Uuid, Holding>, DbError> {
    let ids: Vec<Uuid> = leases.iter().map(|l| l.0).collect();
    let tokens: Vec<Uuid> = leases.iter().map(|l| l.1).collect();
    let rows = client
        .rows(
            include_str!("../../sql/lease_holders.sql"),
            &[&ids, &tokens, &owner.app, &owner.scope_id],
        )
        .await?;
    rows.iter()
        .map(|row| {
            Ok((
                row.try_get("id")?,
                Holding {
                    attempt: row.try_get("attempt")?,
                    held: row.try_get("held")?,
                },
            ))
        })
        .collect()
}

/// Of the `(id, lease_token)` pairs, the ids whose lease is still held (one read).
pub async fn held<C: Statements>(
    client: &C,
    leases: &[(Uuid, Uuid)],
) -> Result<HashSet<Uuid>, DbError> {
    let ids: Vec<Uuid> = leases.iter().map(|l| l.0).collect();
    let tokens: Vec<Uuid> = leases.iter().map(|l| l.1).collect();
    let rows = client
        .rows(include_str!("../../sql/leases_held.sql"), &[&ids, &tokens])
        .await?;
    rows.iter().map(|row| row.try_get("id")).collect()
}
