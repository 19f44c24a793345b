//! Whether this process's claim loops are running: part of a worker replica's
//! readiness. Each loop holds a [`LoopGuard`] for as long as it runs, so a loop that
//! ended (a panic, a bug) turns readiness false and Kubernetes stops counting the pod.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The claim loops this process started, and how many of them still run.
#[derive(Debug, Clone, Default)]
pub struct Liveness {
    expected: Arc<AtomicUsize>,
    running: Arc<AtomicUsize>,
}

impl Liveness {
    /// Counts one more loop that must be running; hold the guard while it runs.
    pub fn enter(&self) -> LoopGuard {
        self.expected.fetch_add(1, Ordering::SeqCst);
        self.running.fetch_add(1, Ordering::SeqCst);
        LoopGuard {
            running: self.running.clone(),
        }
    }

    /// True while every loop that entered still runs (and trivially with none).
    pub fn all_running(&self) -> bool {
        self.running.load(Ordering::SeqCst) == self.expected.load(Ordering::SeqCst)
    }
}

/// Held by a running claim loop; dropping it marks the loop gone.
#[derive(Debug)]
pub struct LoopGuard {
    running: Arc<AtomicUsize>,
}

impl Drop for LoopGuard {
    fn drop(&mut self) {
        self.running.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_that_ends_turns_liveness_false() {
        let liveness = Liveness::default();
        assert!(liveness.all_running());
        let a = liveness.enter();
        let b = liveness.enter();
        assert!(liveness.all_running());
        drop(b);
        assert!(!liveness.all_running());
        drop(a);
        assert!(!liveness.all_running());
    }
}
