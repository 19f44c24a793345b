//! Vacuums tasklane's small, busy tables between autovacuum's visits (see
//! `store::vacuum`). Safe on every replica at once: a table being vacuumed is skipped,
//! and a vacuum by any replica holds off the others for the gap.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::store::vacuum;

/// How often it looks.
pub const INTERVAL: Duration = Duration::from_secs(1);

/// When a table is due: at least 1,000 dead rows (below that a claim walks little),
/// no vacuum for 2 s (at a few thousand tasks a second, a few thousand dead rows
/// collect in the mirror meanwhile; and a vacuum that cannot remove its rows, because
/// an older transaction still runs, is tried again only this often), and at most
/// 64 MiB (a vacuum of the mirror with a few thousand live rows reads well under 1 MiB).
pub const DUE: vacuum::Due = vacuum::Due {
    least_dead: 1_000,
    gap: Duration::from_secs(2),
    most_bytes: 64 << 20,
};

pub struct VacuumKeeper {
    pub pool: crate::store::Pool,
    pub interval: Duration,
    /// Shares the interval with the other maintaining replicas.
    pub spread: super::spread::Spread,
}

impl VacuumKeeper {
    pub async fn run(self, shutdown: CancellationToken) {
        super::every(
            "vacuum",
            || self.spread.wait(self.interval),
            shutdown,
            || self.pass(),
        )
        .await
    }

    /// One look; never reports a full batch (the gap spaces the vacuums).
    pub async fn pass(&self) -> anyhow::Result<bool> {
        let object = self.pool.get().await?;
        let vacuumed = vacuum::vacuum_due(crate::store::client(&object), DUE).await?;
        if !vacuumed.is_empty() {
            tracing::debug!(tables = ?vacuumed, "vacuumed tables that churn faster than autovacuum visits");
        }
        Ok(false)
    }
}
