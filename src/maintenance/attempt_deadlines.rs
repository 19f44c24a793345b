//! The attempt-deadline sweep: a leased attempt past its server-side deadline (claim
//! time + the type's attempt timeout, `ClaimedTask::attempt_deadline_at`) ends as
//! `attempt_timeout` (retried or failed by the outcome rules) whatever its worker says;
//! a later completion is refused as a lost lease. This is how the deadline holds for
//! remote workers; an in-process attempt is ended by its own timer first (keeping its
//! handler's provenance and usage), so the sweep gives those [`IN_PROCESS_GRACE`].

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::service::Tasklane;

/// Attempts one pass ends at most.
const BATCH: i64 = 100;

/// How long past its deadline an attempt of a replica process is left to that
/// process's own timer.
pub const IN_PROCESS_GRACE: Duration = Duration::from_secs(5);

pub struct AttemptDeadlineSweeper {
    pub tasklane: Tasklane,
    pub interval: Duration,
    /// Shares the interval with the other maintaining replicas.
    pub spread: super::spread::Spread,
    /// Where the next pass starts reading the leases: the database's clock at the last
    /// pass that found nothing more, less a margin (`Start::swept`).
    pub start: super::start::Start<chrono::DateTime<chrono::Utc>>,
}

impl AttemptDeadlineSweeper {
    pub async fn run(self, shutdown: CancellationToken) {
        super::every(
            "attempt_deadlines",
            || self.spread.wait(self.interval),
            shutdown,
            || self.pass(),
        )
        .await
    }

    /// One batch; true when it was full.
    pub async fn pass(&self) -> anyhow::Result<bool> {
        let swept = self
            .tasklane
            .time_out_overdue(
                BATCH,
                IN_PROCESS_GRACE,
                self.start.next(std::time::Instant::now()),
            )
            .await?;
        let ended = swept.found;
        self.start.swept(swept.clock, ended, BATCH);
        if ended > 0 {
            tracing::info!(ended, "timed out attempts past their deadline");
        }
        Ok(ended as i64 == BATCH)
    }
}
