//! Planner statistics of young tables. PostgreSQL plans for a never-analyzed table as
//! if it were nearly empty, and a pooled connection keeps such a plan cached until the
//! statistics change: on a fresh `tasks` table the submit's identity probe walks a
//! listing index over every task of the scope, and the claim sorts the whole backlog,
//! both slower with every row, until autovacuum's first ANALYZE (up to a minute).
//! ANALYZE here replaces the statistics, which invalidates those plans.

use crate::store::Statements;
use tokio_postgres::{Client, GenericClient};

use super::DbError;

/// Fixed key of the analyze try-lock ("tlanalyz"), beside the migration lock's.
pub const ANALYZE_LOCK: i64 = 0x746c_616e_616c_797a;

/// The statistics target of the ANALYZE of a table autovacuum has not analyzed yet
/// (PostgreSQL's default is 100): the sample is 300 rows per unit, so 3,000 rows
/// instead of 30,000. What a young table's plans lack is its size and the rough shape
/// of its columns, which the small sample gives for a fraction of the cost: on a fresh
/// database filling fast, ANALYZEs at the default target are a large share of all the
/// database's CPU.
/// Once autovacuum has analyzed a table (at the full target), the keeper's ANALYZEs of
/// it take the full sample too, so a small busy table that the keeper keeps analyzing
/// (the queue mirror) is not left on small samples.
pub const SAMPLE_TARGET: u32 = 10;

/// Analyzes every tasklane table with at least `least_changes` rows changed since its
/// last ANALYZE and no fewer than it held then, unless another replica is doing so at
/// this moment. Returns the tables analyzed (or skipped because a vacuum held them).
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
        .row(
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
    let mut stale = stale(&tx, least_changes).await?;
    // The names come from the catalog, quoted by format('%I.%I'); ANALYZE takes no
    // parameters. The tables autovacuum has analyzed first, then the young ones on the
    // small sample (the setting lasts to the end of the transaction).
    // SKIP_LOCKED: a table a vacuum holds is skipped, not waited for. An ANALYZE that
    // waits for autovacuum's lock cancels that autovacuum (PostgreSQL gives way to
    // any waiter), and the tasks table, analyzed here whenever its changes since the
    // last ANALYZE reach its size (every half minute under a steady flow), would then
    // never be vacuumed: its dead rows and its file would grow without bound.
    stale.sort_by_key(|&(_, young)| young);
    let mut sampled = false;
    for (name, young) in &stale {
        if *young && !sampled {
            tx.run(
                include_str!("../../sql/stats_sample.sql"),
                &[&SAMPLE_TARGET.to_string()],
            )
            .await?;
            sampled = true;
        }
        tx.batch_execute(&format!("ANALYZE (SKIP_LOCKED) {name}"))
            .await?;
    }
    tx.commit().await?;
    Ok(stale.into_iter().map(|(name, _)| name).collect())
}

/// The stale tables, each with whether autovacuum has never analyzed it.
async fn stale<C: GenericClient + Sync>(
    client: &C,
    least_changes: i64,
) -> Result<Vec<(String, bool)>, DbError> {
    client
        .rows(include_str!("../../sql/stats_stale.sql"), &[&least_changes])
        .await?
        .iter()
        .map(|row| Ok((row.try_get("name")?, row.try_get("young")?)))
        .collect()
}
