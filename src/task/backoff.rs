//! Retry backoff: capped exponential with full jitter on the upper half, so retries of
//! many tasks that failed together spread out instead of returning as one herd.

use std::time::Duration;

/// The backoff rule of a task type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Delay before the second attempt.
    pub base: Duration,
    /// No delay is ever longer than this.
    pub cap: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base: Duration::from_secs(1),
            cap: Duration::from_secs(300),
        }
    }
}

impl Backoff {
    /// The ceiling of the delay after `attempt` (1-based) failed: `base * 2^(attempt-1)`,
    /// capped.
    pub fn ceiling(&self, attempt: u32) -> Duration {
        let exponent = attempt.saturating_sub(1).min(31);
        self.base.saturating_mul(1u32 << exponent).min(self.cap)
    }

    /// The delay after `attempt` failed, with `unit` in `[0, 1)` drawn by the caller: a
    /// value in `[ceiling/2, ceiling]`, so it grows with attempts yet never herds.
    pub fn delay(&self, attempt: u32, unit: f64) -> Duration {
        let ceiling = self.ceiling(attempt);
        let half = ceiling / 2;
        half + half.mul_f64(unit.clamp(0.0, 1.0))
    }

    /// [`Backoff::delay`] with a random jitter.
    pub fn jittered(&self, attempt: u32) -> Duration {
        self.delay(attempt, rand::random::<f64>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_exponentially_until_the_cap() {
        let backoff = Backoff {
            base: Duration::from_secs(1),
            cap: Duration::from_secs(60),
        };
        let ceilings: Vec<u64> = (1..=8).map(|a| backoff.ceiling(a).as_secs()).collect();
        assert_eq!(ceilings, vec![1, 2, 4, 8, 16, 32, 60, 60]);
        assert_eq!(backoff.ceiling(10_000), Duration::from_secs(60));
    }

    #[test]
    fn jitter_stays_within_the_upper_half_of_the_ceiling() {
        let backoff = Backoff::default();
        for attempt in 1..=12 {
            let ceiling = backoff.ceiling(attempt);
            assert_eq!(backoff.delay(attempt, 0.0), ceiling / 2);
            assert_eq!(backoff.delay(attempt, 1.0), ceiling);
            let d = backoff.jittered(attempt);
            assert!(
                d >= ceiling / 2 && d <= ceiling,
                "{d:?} outside for attempt {attempt}"
            );
        }
    }
}
