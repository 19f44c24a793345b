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
    /// Where the next pass starts reading the deadlines: the database's clock at the last
    /// pass that found nothing more, less a margin (`Start::swept`).
    pub start: super::start::Start<chrono::DateTime<chrono::Utc>>,
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
        let from = self.start.next(std::time::Instant::now());
        let client = self.pool.get().await?;
        let client = crate::store::client(&client);
        // Read before the sweep, in a transaction of its own: a clock no later than the
        // sweep's.
        let clock = crate::store::clock::now(client).await?;
        let expired = recover::expire_deadlines(client, BATCH, from).await?;
        self.start.swept(clock, expired, BATCH);
        if expired > 0 {
            tracing::info!(expired, "failed tasks past their queue deadline");
        }
        Ok(expired as i64 == BATCH)
    }
}
