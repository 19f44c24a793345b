//! Prunes the admission history past its 24 h (DESIGN §5: "admission history older than
//! 24 h is pruned too") and old refusal counts. Rate tokens remember their own last use,
//! so the history is only what a newly set rate limit starts from; pruning it never
//! frees a token. Safe on every replica at once (SKIP LOCKED).

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::store::admission;

/// Rows one pass deletes at most.
const BATCH: i64 = 5000;
/// How often it runs: the history only needs to stay near 24 h.
pub const INTERVAL: Duration = Duration::from_secs(60);

pub struct AdmissionHistoryPruner {
    pub pool: deadpool_postgres::Pool,
    pub interval: Duration,
}

impl AdmissionHistoryPruner {
    pub async fn run(self, shutdown: CancellationToken) {
        super::every("admission-history", self.interval, shutdown, || self.pass()).await
    }

    /// One batch; true when it was full.
    pub async fn pass(&self) -> anyhow::Result<bool> {
        let client = self.pool.get().await?;
        let pruned = admission::prune(crate::store::client(&client), BATCH).await?;
        if pruned > 0 {
            tracing::info!(pruned, "pruned admission history older than 24 h");
        }
        Ok(pruned as i64 == BATCH)
    }
}
