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
//! A pass starts where the passes before it got to ([`Start`]): the index it reads keeps
//! an entry for every pruned task while an older snapshot is open (a long `pg_dump`, a
//! forgotten transaction), and a pass from the start of the index would step over all
//! of them, every pass.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use crate::store::prune;

/// Default most tasks deleted per pass.
pub const DEFAULT_BATCH: i64 = 100;
/// Default retention after both release and finish: 24 h.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);
/// How often a pass starts from the start of the index all the same: a task released
/// before the latest one pruned (released while it ran, then finished; released in a
/// transaction that began earlier) waits at most this long past its retention.
pub const FULL_PASS_EVERY: Duration = Duration::from_secs(60);

/// Where the next pass starts: at the latest `released_at` the passes have deleted,
/// except for a pass from the start every [`FULL_PASS_EVERY`] (and the first).
#[derive(Debug, Default)]
pub struct Start(Mutex<Reached>);

#[derive(Debug, Default)]
struct Reached {
    at: Option<DateTime<Utc>>,
    full_pass: Option<Instant>,
}

impl Start {
    /// The least `released_at` of the pass starting at `now`; `None` from the start.
    pub fn next(&self, now: Instant) -> Option<DateTime<Utc>> {
        let mut reached = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match reached.full_pass {
            Some(at) if now.saturating_duration_since(at) < FULL_PASS_EVERY => reached.at,
            _ => {
                reached.full_pass = Some(now);
                None
            }
        }
    }

    /// A pass deleted tasks released up to `at`.
    pub fn reached(&self, at: Option<DateTime<Utc>>) {
        let mut reached = self.0.lock().unwrap_or_else(|e| e.into_inner());
        reached.at = reached.at.max(at);
    }
}

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
    /// Where the next pass starts.
    pub start: Start,
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
        let deliveries =
            crate::store::outbox::prune(crate::store::client(&client), self.retention, self.batch)
                .await
                .context("prune webhook deliveries")?;
        if deliveries > 0 {
            tracing::info!(deliveries, "pruned webhook deliveries past their retention");
        }
        Ok(pruned as i64 >= self.batch || deliveries as i64 >= self.batch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_start_where_the_last_got_to_and_from_the_start_every_so_often() {
        let start = Start::default();
        let t0 = Instant::now();
        let day = |d: i64| Some(DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::days(d));
        assert_eq!(start.next(t0), None, "the first pass is a full one");
        start.reached(day(10));
        assert_eq!(start.next(t0 + Duration::from_secs(1)), day(10));
        start.reached(None);
        start.reached(day(9));
        assert_eq!(
            start.next(t0 + Duration::from_secs(2)),
            day(10),
            "never back"
        );
        start.reached(day(11));
        assert_eq!(start.next(t0 + FULL_PASS_EVERY), None, "a full pass");
        assert_eq!(start.next(t0 + FULL_PASS_EVERY), day(11));
    }
}
