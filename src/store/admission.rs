//! Admission in the database: one call of `tasklane.admit` inside
//! the submit statement (`tasklane.submit_task`) or a retry's transaction takes the
//! reservations or reports the first refusing check; `src/admission` turns that report
//! into a [`crate::admission::Refusal`]. Also the bookkeeping around it: refusal counts
//! and pruning of the admission history.

use crate::store::Statements;
use chrono::{DateTime, Utc};
use tokio_postgres::GenericClient;
use uuid::Uuid;

use super::DbError;

/// What `tasklane.admit` decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdmitReport {
    /// None when admitted; else the stable refusal code.
    pub refused: Option<String>,
    /// The refusing limit.
    pub limit_id: Option<i64>,
    /// Rate refusals: when the oldest admission leaves the window.
    pub free_at: Option<DateTime<Utc>>,
    /// The time the decision was taken at (the database's, or `now` when given).
    pub at: DateTime<Utc>,
}

/// Runs admission for the new task `id` in the caller's transaction. `now` replaces the
/// database clock (tests); production passes `None`.
pub async fn admit<C: GenericClient + Sync>(
    tx: &C,
    id: Uuid,
    app: &str,
    usage_subject: Option<&str>,
    now: Option<DateTime<Utc>>,
) -> Result<AdmitReport, DbError> {
    let row = tx
        .row(
            include_str!("../../sql/admit.sql"),
            &[&id, &app, &usage_subject, &now],
        )
        .await?;
    Ok(AdmitReport {
        refused: row.try_get("refused")?,
        limit_id: row.try_get("limit_id")?,
        free_at: row.try_get("free_at")?,
        at: row.try_get("at")?,
    })
}

/// Marks whether an existing task (requeued by `retry`) holds capacity after [`admit`].
pub async fn mark_readmitted<C: GenericClient + Sync>(tx: &C, id: Uuid) -> Result<(), DbError> {
    tx.run(include_str!("../../sql/readmit_mark.sql"), &[&id])
        .await?;
    Ok(())
}

/// Counts a refusal for the overview. Call it outside the refused transaction.
pub async fn record_refusal<C: GenericClient + Sync>(
    client: &C,
    code: &str,
    app: &str,
    count: i64,
) -> Result<(), DbError> {
    client
        .run(
            include_str!("../../sql/refusal_record.sql"),
            &[&code, &app, &count],
        )
        .await?;
    Ok(())
}

/// Deletes up to `limit` admission-history rows older than 24 h (and old refusal
/// counts, and the budget reservations of ended attempts); returns how many history
/// rows went.
pub async fn prune<C: GenericClient + Sync>(client: &C, limit: i64) -> Result<u64, DbError> {
    let row = client
        .row(include_str!("../../sql/admission_prune.sql"), &[&limit])
        .await?;
    Ok(row.try_get::<_, i64>(0)? as u64)
}

/// Frees slots whose task is gone or finished (capacity) or not running (resources):
/// a safety net for anything that bypassed the release triggers. Runs its own
/// REPEATABLE READ transaction; a concurrent change to a candidate slot makes it fail
/// with a serialization error (retry at the next pass). Returns the slots freed.
pub async fn reconcile_slots(client: &mut tokio_postgres::Client) -> Result<u64, DbError> {
    let tx = client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .start()
        .await?;
    let row = tx
        .row(include_str!("../../sql/slots_reconcile.sql"), &[])
        .await?;
    let freed: i64 = row.try_get(0)?;
    tx.commit().await?;
    Ok(freed as u64)
}
