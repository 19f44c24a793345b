//! Planner statistics of young tables. PostgreSQL plans for a never-analyzed table as
//! if it were nearly empty, and a pooled connection keeps such a plan cached until the
//! statistics change: on a fresh `tasks` table the submit's identity probe walks a
//! listing index over every task of the scope, and the claim sorts the whole backlog,
//! both slower with every row, until autovacuum's first ANALYZE (up to a minute).
//! ANALYZE here replaces the statistics, which invalidates those plans.

use tokio_postgres::{Client, GenericClient};

use super::DbError;

/// Fixed key of the analyze try-lock ("tlanalyz"), beside the migration lock's.
pub const ANALYZE_LOCK: i64 = 0x746c_616e_616c_797a;

/// Analyzes every tasklane table with at least `least_changes` rows changed since its
/// last ANALYZE and no fewer than it held then, unless another replica is doing so at
/// this moment. Returns the tables analyzed.
pub async fn analyze_stale(
    client: &mut Client,
    least_changes: i64,
) -> Result<Vec<String>, DbError> {
    // A cheap look first, so a pass with nothing to do opens no transaction.
    if stale(client, least_changes).await?.is_empty() {
        return Ok(Vec::new());
    }
    let tx = client.transaction().await?;
    let taken: bool = tx
        .query_one(
            include_str!("../../sql/stats_analyze_lock.sql"),
            &[&ANALYZE_LOCK],
        )
        .await?
        .try_get(0)?;
    if !taken {
        return Ok(Vec::new());
    }
    // Again under the lock: a replica that held it a moment ago may have analyzed them
    // (ANALYZE resets the counts as it ends).
    let stale = stale(&tx, least_changes).await?;
    // The names come from the catalog, quoted by format('%I.%I'); ANALYZE takes no
    // parameters.
    for name in &stale {
        tx.batch_execute(&format!("ANALYZE {name}")).await?;
    }
    tx.commit().await?;
    Ok(stale)
}

async fn stale<C: GenericClient + Sync>(
    client: &C,
    least_changes: i64,
) -> Result<Vec<String>, DbError> {
    client
        .query(include_str!("../../sql/stats_stale.sql"), &[&least_changes])
        .await?
        .iter()
        .map(|row| row.try_get("name"))
        .collect()
}
