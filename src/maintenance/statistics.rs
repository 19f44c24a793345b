//! Keeps the planner statistics of young tables current (see `store::statistics`): a
//! new deployment's first burst is planned on real row counts within a pass, not after
//! autovacuum's first ANALYZE. Safe on every replica at once (an advisory try-lock).

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::store::statistics;

/// How often it looks: a few hundred submits into a fresh table at most go by on the
/// empty-table plans.
pub const INTERVAL: Duration = Duration::from_secs(1);

/// Fewest changed rows that make a table's statistics worth replacing. Below this the
/// empty-table plans cost little; above it, each ANALYZE of a table that has at least
/// doubled since the last one, so a growing table is analyzed a logarithmic number of
/// times (1,000, 2,000, 4,000, ... rows) until autovacuum's own rule takes over.
pub const LEAST_CHANGES: i64 = 1_000;

pub struct StatisticsKeeper {
    pub pool: crate::store::Pool,
    pub interval: Duration,
    /// Shares the interval with the other maintaining replicas.
    pub spread: super::spread::Spread,
}

impl StatisticsKeeper {
    pub async fn run(self, shutdown: CancellationToken) {
        super::every(
            "statistics",
            || self.spread.wait(self.interval),
            shutdown,
            || self.pass(),
        )
        .await
    }

    /// One look; never reports a full batch (one ANALYZE per table is all it takes).
    pub async fn pass(&self) -> anyhow::Result<bool> {
        let mut object = self.pool.get().await?;
        let client: &mut tokio_postgres::Client = &mut object;
        let analyzed = statistics::analyze_stale(client, LEAST_CHANGES).await?;
        if !analyzed.is_empty() {
            tracing::info!(tables = ?analyzed, "analyzed tables that outgrew their statistics");
        }
        Ok(false)
    }
}
