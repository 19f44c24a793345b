//! The application lifecycle from Rust: release, owner deletion (with its
//! fence), lifting a fence, and the reconciliation listing of unreleased sources.
//!
//! Every function calls the SQL API (current definitions in `sql/functions/`), so an
//! application calling `tasklane.delete_tasks(...)` in its own transaction and a Rust
//! caller passing its transaction here run one implementation. Each takes a generic
//! client: pass a transaction to make the change commit or roll back with the caller's
//! own writes.

use crate::store::Statements;
use crate::task::record::SourceRef;
use chrono::{DateTime, Utc};
use tokio_postgres::GenericClient;

use super::submit::SubmitError;
use super::DbError;

/// Most pairs one page of [`unreleased_sources`] returns.
pub const MAX_PAGE: i64 = 100;

/// Marks the task with this identity released and returns its `released_at` (the first
/// one on repeats), or `None` when no task has the identity. Never cancels: a task in
/// flight keeps running and settles normally.
pub async fn release<C: GenericClient + Sync>(
    client: &C,
    app: &str,
    scope_id: &str,
    effect_key: &str,
    usage_subject: Option<&str>,
) -> Result<Option<DateTime<Utc>>, DbError> {
    let row = client
        .row(
            include_str!("../../sql/lifecycle_release.sql"),
            &[&app, &scope_id, &effect_key, &usage_subject],
        )
        .await?;
    row.try_get("released_at")
}

/// Deletes the scope's tasks in every state, or only those whose `source_id` equals
/// `source_id` exactly; returns how many. Takes the owner lock exclusively until the
/// caller's transaction ends, so it serializes with admission for the scope. With
/// `fence`, later submits for the scope are refused with
/// [`SubmitError::ScopeDeleted`] until [`lift_fence`]. Needs READ COMMITTED (the
/// function refuses other isolation levels).
pub async fn delete<C: GenericClient + Sync>(
    client: &C,
    app: &str,
    scope_id: &str,
    source_id: Option<&str>,
    fence: bool,
) -> Result<u64, DbError> {
    let row = client
        .row(
            include_str!("../../sql/lifecycle_delete.sql"),
            &[&app, &scope_id, &source_id, &fence],
        )
        .await?;
    Ok(row.try_get::<_, i64>("deleted")? as u64)
}

/// Lets submits for a fenced scope in again; returns whether it was fenced.
pub async fn lift_fence<C: GenericClient + Sync>(
    client: &C,
    app: &str,
    scope_id: &str,
) -> Result<bool, DbError> {
    let row = client
        .row(
            include_str!("../../sql/lifecycle_lift_fence.sql"),
            &[&app, &scope_id],
        )
        .await?;
    row.try_get("lifted")
}

/// Refuses to queue a task again in a fenced scope. Retry calls it after taking the
/// owner lock shared; submit checks the fence inside `tasklane.submit_task`.
pub async fn check_fence<C: GenericClient + Sync>(
    client: &C,
    app: &str,
    scope_id: &str,
) -> Result<(), SubmitError> {
    let row = client
        .row(
            include_str!("../../sql/fence_check.sql"),
            &[&app, &scope_id],
        )
        .await?;
    if row.try_get::<_, bool>("fenced")? {
        return Err(SubmitError::ScopeDeleted);
    }
    Ok(())
}

/// Up to `limit` (clamped to 1..=[`MAX_PAGE`]) distinct pairs of `app` with unreleased
/// tasks, after `after` in (scope, source) byte order with no source first.
pub async fn unreleased_sources<C: GenericClient + Sync>(
    client: &C,
    app: &str,
    after: Option<&SourceRef>,
    limit: i64,
) -> Result<Vec<SourceRef>, DbError> {
    let limit = limit.clamp(1, MAX_PAGE) as i32;
    let after_scope = after.map(|a| a.scope_id.as_str());
    let after_source = after.and_then(|a| a.source_id.as_deref());
    let rows = client
        .rows(
            include_str!("../../sql/lifecycle_unreleased.sql"),
            &[&app, &after_scope, &after_source, &limit],
        )
        .await?;
    rows.iter()
        .map(|row| {
            Ok(SourceRef {
                scope_id: row.try_get("scope_id")?,
                source_id: row.try_get("source_id")?,
            })
        })
        .collect()
}
