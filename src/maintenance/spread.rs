//! Spreads the cluster-wide sweeps over the replicas that run them. Each sweep (the
//! rescuers, queue deadlines, pruning, statistics, vacuum, the floors while the claims
//! stand still, the webhook outbox's poll) is safe on every replica at once, but need
//! not run on every one each interval: a replica runs it every `interval ×
//! maintainers`, where maintainers is how many live replicas run the maintenance role
//! (its registry heartbeat counts them), so the cluster as a whole runs each sweep about
//! once per interval, and what an idle cluster costs PostgreSQL does not grow with its
//! replica count. Each wait is jittered by ±25% so that replicas started together drift
//! apart instead of sweeping in step.
//!
//! The idle claim loops share their polls the same way, counted over the replicas that
//! run the worker role: a poll finds what no wake-up announced (a retry whose backoff
//! ended on a replica that has since stopped, a wake-up lost with its connection), and
//! any replica's poll finds it, so the cluster need not poll once a second per replica.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::Rng as _;

/// The count of live replicas sharing a cluster-wide duty (the sweeps: those that
/// maintain; the idle polls: those that work), which its waits scale with; cloning
/// shares it.
#[derive(Clone, Debug)]
pub struct Spread {
    sharers: Arc<AtomicU32>,
}

impl Default for Spread {
    fn default() -> Self {
        Spread {
            sharers: Arc::new(AtomicU32::new(1)),
        }
    }
}

impl Spread {
    /// Records the registry's latest count (at least this replica).
    pub fn set(&self, sharers: u32) {
        self.sharers.store(sharers.max(1), Ordering::Relaxed);
    }

    /// How many replicas share the duty, as last counted.
    pub fn sharers(&self) -> u32 {
        self.sharers.load(Ordering::Relaxed)
    }

    /// The wait before this replica's next pass of a duty the cluster should do every
    /// `interval`: `interval × sharers`, jittered by ±25%.
    pub fn wait(&self, interval: Duration) -> Duration {
        let jitter = rand::rng().random_range(0.75..=1.25);
        stretched(interval, self.sharers()).mul_f64(jitter)
    }
}

/// `interval × sharers`, saturating.
fn stretched(interval: Duration, sharers: u32) -> Duration {
    interval.saturating_mul(sharers.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_replica_keeps_the_interval_and_more_stretch_it() {
        let second = Duration::from_secs(1);
        assert_eq!(stretched(second, 0), second);
        assert_eq!(stretched(second, 1), second);
        assert_eq!(stretched(second, 8), Duration::from_secs(8));
        assert_eq!(stretched(Duration::MAX, 2), Duration::MAX);
    }

    #[test]
    fn the_wait_is_jittered_around_the_stretched_interval() {
        let spread = Spread::default();
        spread.set(4);
        for _ in 0..100 {
            let wait = spread.wait(Duration::from_secs(1));
            assert!(
                wait >= Duration::from_secs(3) && wait <= Duration::from_secs(5),
                "{wait:?}"
            );
        }
        spread.set(0);
        assert_eq!(spread.sharers(), 1, "a replica counts at least itself");
    }
}
