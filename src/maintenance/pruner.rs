//! The pruning sweep: terminal tasks released and finished longer ago than
//! the retention are deleted with their events, at most `batch` per pass, again at once
//! while passes come back full, then after `interval`. Every replica may run it: the
//! statement takes its rows with SKIP LOCKED, so sweepers never wait on or double count
//! each other. Unreleased tasks are kept however old; unfinished ones are never touched.
//!
//! The webhook delivery log goes the same way: delivered and failed notifications
//! finished longer than the retention ago, `batch` per pass (pending ones never; a
//! deleted task takes its undelivered ones with it, by trigger).
//!
//! Admission history (rate windows older than 24 h) is swept by its own service,
//! `maintenance::admission_history`, on its own interval.
//!
//! A pass starts where the passes before it got to (`super::start::Start`, one for the
//! tasks and one for the delivery log): the index it reads keeps an entry for every
//! pruned row while an older snapshot is open (a long `pg_dump`, a forgotten
//! transaction), and a pass from the start of the index would step over all of them,
//! every pass.

use std::time::{Duration, Instant};

use super::start::Start;

use chrono::{DateTime, Utc};

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use crate::store::prune;

/// Default most tasks deleted per pass.
pub const DEFAULT_BATCH: i64 = 100;
/// Default retention after both release and finish: 24 h.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);
pub struct Pruner {
    pub pool: crate::store::Pool,
    /// Pause between passes once a pass was not full.
    pub interval: Duration,
    /// Shares the interval with the other maintaining replicas.
    pub spread: super::spread::Spread,
    /// Most tasks one pass deletes.
    pub batch: i64,
    /// How long a task is kept after both its release and its finish.
    pub retention: Duration,
    pub instruments: crate::telemetry::Instruments,
    /// Where the next pass over the tasks starts.
    pub start: Start<DateTime<Utc>>,
    /// Where the next pass over the delivery log starts.
    pub deliveries_start: Start<uuid::Uuid>,
}

impl Pruner {
    pub async fn run(self, shutdown: CancellationToken) {
        super::every(
            "pruner",
            || self.spread.wait(self.interval),
            shutdown,
            || self.pass(),
        )
        .await
    }

    /// One batch; true when it was full (more may be due).
    pub async fn pass(&self) -> anyhow::Result<bool> {
        let client = self.pool.get().await.context("connection for pruning")?;
        let pruned = prune::prune_tasks(
            crate::store::client(&client),
            self.retention,
            self.batch,
            None,
            self.start.next(Instant::now()),
        )
        .await
        .context("prune tasks")?;
        self.start.reached(pruned.reached);
        let pruned = pruned.count;
        if pruned > 0 {
            tracing::info!(pruned, "pruned released tasks past their retention");
        }
        self.instruments.pruned(pruned);
        let deliveries = crate::store::outbox::prune(
            crate::store::client(&client),
            self.retention,
            self.batch,
            self.deliveries_start.next(Instant::now()),
        )
        .await
        .context("prune webhook deliveries")?;
        self.deliveries_start.reached(deliveries.reached);
        let deliveries = deliveries.count;
        if deliveries > 0 {
            tracing::info!(deliveries, "pruned webhook deliveries past their retention");
        }
        Ok(pruned as i64 >= self.batch || deliveries as i64 >= self.batch)
    }
}
