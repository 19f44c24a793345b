//! Prunes the admission history older than 24 h and old refusal counts. Rate tokens
//! remember their own last use, so the history is only what a newly set rate limit
//! starts from; pruning it never frees a token. Safe on every replica at once
//! (SKIP LOCKED). Each pass also frees slots whose task no longer needs them, a safety
//! net behind the release triggers.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::store::admission;

/// Rows one pass deletes at most.
const BATCH: i64 = 5000;
/// How often it runs: the history only needs to stay near 24 h.
pub const INTERVAL: Duration = Duration::from_secs(60);

pub struct AdmissionHistoryPruner {
    pub pool: crate::store::Pool,
    pub interval: Duration,
    /// Shares the interval with the other maintaining replicas.
    pub spread: super::spread::Spread,
}

impl AdmissionHistoryPruner {
    pub async fn run(self, shutdown: CancellationToken) {
        super::every(
            "admission-history",
            || self.spread.wait(self.interval),
            shutdown,
            || self.pass(),
        )
        .await
    }

    /// One batch; true when it was full.
    pub async fn pass(&self) -> anyhow::Result<bool> {
        let mut object = self.pool.get().await?;
        let pruned = admission::prune(crate::store::client(&object), BATCH).await?;
        if pruned > 0 {
            tracing::info!(pruned, "pruned admission history older than 24 h");
        }
        let client: &mut tokio_postgres::Client = &mut object;
        match admission::reconcile_slots(client).await {
            Ok(0) => {}
            Ok(freed) => tracing::warn!(freed, "freed slots whose task no longer held them"),
            // A slot changed under the snapshot: nothing was freed; the next pass retries.
            Err(error)
                if error.code()
                    == Some(&tokio_postgres::error::SqlState::T_R_SERIALIZATION_FAILURE) => {}
            Err(error) => return Err(error.into()),
        }
        Ok(pruned as i64 == BATCH)
    }
}
