//! Whether this process's claim loops are running: part of a worker replica's
//! readiness. Each loop holds a [`LoopGuard`] for as long as it runs, so a loop that
//! ended (a panic, a bug) turns readiness false and Kubernetes stops counting the pod.
//! A loop that is stuck rather than ended is not seen here; its tasks' leases expire
//! and the rescuer hands them to other replicas.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// How many of this process's claim loops have ended. Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct Liveness {
    ended: Arc<AtomicUsize>,
}

impl Liveness {
    /// A loop starts; hold the guard while it runs.
    pub fn enter(&self) -> LoopGuard {
        LoopGuard {
            ended: self.ended.clone(),
        }
    }

    /// True while no loop that entered has ended (one counter, so no reader can catch
    /// a loop half-registered).
    pub fn all_running(&self) -> bool {
        self.ended.load(Ordering::SeqCst) == 0
    }
}

/// Held by a running claim loop; dropping it marks the loop ended.
#[derive(Debug)]
pub struct LoopGuard {
    ended: Arc<AtomicUsize>,
}

impl Drop for LoopGuard {
    fn drop(&mut self) {
        self.ended.fetch_add(1, Ordering::SeqCst);
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
