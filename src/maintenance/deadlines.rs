//! The queue-deadline sweeper: waiting tasks past their deadline fail closed
//! (`queue_deadline_exceeded`). Claims never take them meanwhile.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::store::recover;

const BATCH: i64 = 500;

pub struct DeadlineSweeper {
    pub pool: crate::store::Pool,
    pub interval: Duration,
    /// Shares the interval with the other maintaining replicas.
    pub spread: super::spread::Spread,
}

impl DeadlineSweeper {
    pub async fn run(self, shutdown: CancellationToken) {
        super::every(
            "deadlines",
            || self.spread.wait(self.interval),
            shutdown,
            || self.pass(),
        )
        .await
    }

    pub async fn pass(&self) -> anyhow::Result<bool> {
        let client = self.pool.get().await?;
        let expired = recover::expire_deadlines(crate::store::client(&client), BATCH).await?;
        if expired > 0 {
            tracing::info!(expired, "failed tasks past their queue deadline");
        }
        Ok(expired as i64 == BATCH)
    }
}
