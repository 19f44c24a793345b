//! One log line when the database becomes unavailable and one when it answers again,
//! however many operations fail in between (docs/errors.md). During an outage every
//! operation in flight fails (each claim loop, heartbeat batch, maintenance pass and
//! request), and each logging its own warning would bury the one line an operator needs
//! under hundreds a second. The first failure of a streak is a warning; the others are
//! debug lines; the first success after them is an info line saying how long the streak
//! lasted and how many failures it held.
//!
//! The streak is the process's (one per replica process), so the callers need no
//! handle: whoever decides that a failure means "the database is unavailable" (the
//! service's classification, `store::connect::lost`) calls [`failed`], and the loops
//! that reach the database call [`answered`] after a success, which costs one atomic
//! load while no streak runs.

use std::fmt::Display;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static STREAK: Mutex<Streak> = Mutex::new(Streak::None);
/// Whether a streak runs: what [`answered`] reads before it takes the lock.
static RUNNING: AtomicBool = AtomicBool::new(false);

/// Records that `operation` failed because the database was unavailable: a warning when
/// this begins a streak, a debug line within one.
pub fn failed(operation: &'static str, error: &dyn Display, sqlstate: Option<&str>) {
    let began = {
        let mut streak = lock();
        RUNNING.store(true, Ordering::Release);
        streak.fail(Instant::now())
    };
    if began {
        tracing::warn!(
            operation,
            sqlstate,
            %error,
            "the database is unavailable; operations are retried as each one's policy says, further failures are logged at debug until it answers again"
        );
    } else {
        tracing::debug!(operation, sqlstate, %error, "the database is still unavailable");
    }
}

/// Records that an operation reached the database: ends a running streak with one info
/// line.
pub fn answered() {
    if !RUNNING.load(Ordering::Acquire) {
        return;
    }
    let ended = {
        let mut streak = lock();
        RUNNING.store(false, Ordering::Release);
        streak.answer(Instant::now())
    };
    if let Some((lasted, failures)) = ended {
        tracing::info!(
            after_ms = lasted.as_millis() as u64,
            failures,
            "the database answers again"
        );
    }
}

fn lock() -> std::sync::MutexGuard<'static, Streak> {
    STREAK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether failures are being counted, since when and how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Streak {
    None,
    Running { since: Instant, failures: u64 },
}

impl Streak {
    /// Counts a failure; true when it began the streak.
    fn fail(&mut self, now: Instant) -> bool {
        match self {
            Streak::None => {
                *self = Streak::Running {
                    since: now,
                    failures: 1,
                };
                true
            }
            Streak::Running { failures, .. } => {
                *failures += 1;
                false
            }
        }
    }

    /// Ends the streak, if one runs: how long it lasted and its failures.
    fn answer(&mut self, now: Instant) -> Option<(Duration, u64)> {
        match std::mem::replace(self, Streak::None) {
            Streak::None => None,
            Streak::Running { since, failures } => Some((now - since, failures)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streak_begins_once_and_ends_at_the_first_success() {
        let start = Instant::now();
        let mut streak = Streak::None;
        assert_eq!(streak.answer(start), None, "no streak, nothing to end");
        assert!(streak.fail(start), "the first failure begins it");
        assert!(!streak.fail(start), "the second is within it");
        assert!(!streak.fail(start));
        let later = start + Duration::from_secs(7);
        assert_eq!(streak.answer(later), Some((Duration::from_secs(7), 3)));
        assert_eq!(streak.answer(later), None, "ended once");
        assert!(streak.fail(later), "a new failure begins a new streak");
    }
}
