//! The attempts one claim loop runs: its slots (the loop's concurrency), the tasks that
//! run them, and what they share: the completer (group commit of successes), the
//! heartbeat batcher and the abort signal of a shutdown past its grace period.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::attempt::Attempt;
use super::completer::{self, Completer};
use super::heartbeats::Heartbeats;
use super::HandlerRegistry;
use crate::service::{ClaimedTask, Tasklane};
use crate::task::Locality;

/// Longest a claim loop with a backlog waits for half a batch of free slots.
const CLAIM_COOLDOWN: Duration = Duration::from_millis(2);

pub(super) struct Running {
    slots: Arc<Semaphore>,
    concurrency: usize,
    attempts: JoinSet<()>,
    abort: CancellationToken,
    completer: Completer,
    heartbeats: Heartbeats,
    tasklane: Tasklane,
    handlers: Arc<HandlerRegistry>,
    locality: Locality,
    /// Stops the heartbeat batcher when the loop's attempts are done with, however the
    /// loop ends (drained, or its future dropped).
    _beating: DropGuard,
}

impl Running {
    /// `concurrency` slots, and the heartbeat batcher, which runs as long as this does.
    /// Successes settle through `completer` (the replica's, shared by its loops), or a
    /// completer of this loop's own.
    pub fn start(
        tasklane: &Tasklane,
        handlers: &Arc<HandlerRegistry>,
        (concurrency, locality): (usize, Locality),
        completer: Option<Completer>,
    ) -> Running {
        let beating = CancellationToken::new();
        Running {
            slots: Arc::new(Semaphore::new(concurrency)),
            concurrency,
            attempts: JoinSet::new(),
            abort: CancellationToken::new(),
            completer: completer.unwrap_or_else(|| {
                Completer::start(
                    tasklane.clone(),
                    completer::DEFAULT_MAX_BATCH,
                    completer::DEFAULT_MAX_IN_FLIGHT,
                )
            }),
            heartbeats: Heartbeats::start(tasklane.clone(), beating.clone()),
            tasklane: tasklane.clone(),
            handlers: handlers.clone(),
            locality,
            _beating: beating.drop_guard(),
        }
    }

    /// How many tasks the next claim may take (at most `claim_batch`), once a slot is
    /// free; `None` when `shutdown` comes first. With a `backlog`, waits (briefly) for
    /// a useful share of a batch rather than one task per freed slot: short tasks free
    /// their slots in bursts (group commit), and a claim round trip per task would cap
    /// throughput at the round-trip rate. The cooldown bounds the wait when slots free
    /// one by one (long tasks).
    pub async fn free_slots(
        &mut self,
        backlog: bool,
        claim_batch: usize,
        shutdown: &CancellationToken,
    ) -> Option<usize> {
        // Reap finished attempts so the set does not grow.
        while self.attempts.try_join_next().is_some() {}
        if self.slots.available_permits() == 0 {
            tokio::select! {
                permit = self.slots.clone().acquire_owned() => drop(permit),
                _ = shutdown.cancelled() => return None,
            }
        }
        let want = claim_batch.min(self.concurrency).div_ceil(2);
        if backlog && self.slots.available_permits() < want {
            tokio::select! {
                permits = self.slots.clone().acquire_many_owned(want as u32) => drop(permits),
                _ = tokio::time::sleep(CLAIM_COOLDOWN) => {}
                _ = shutdown.cancelled() => return None,
            }
        }
        Some(self.slots.available_permits().min(claim_batch))
    }

    /// Whether a slot is free now.
    pub fn has_room(&self) -> bool {
        self.slots.available_permits() > 0
    }

    /// Runs an attempt of each claimed task, each in a slot of its own.
    pub async fn run_all(&mut self, claimed: Vec<ClaimedTask>) {
        for task in claimed {
            let permit = self
                .slots
                .clone()
                .acquire_owned()
                .await
                .expect("the semaphore is never closed");
            let runner = Attempt::new(
                task,
                self.tasklane.clone(),
                self.handlers.clone(),
                self.abort.clone(),
                self.completer.clone(),
                self.heartbeats.clone(),
                self.locality,
            );
            self.attempts.spawn(async move {
                runner.run().await;
                drop(permit);
            });
        }
    }

    /// Waits up to `grace` for the running attempts; those still running then hand
    /// their leases back.
    pub async fn drain(mut self, grace: Duration) {
        let drained = tokio::time::timeout(grace, async {
            while self.attempts.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            self.abort.cancel();
            while self.attempts.join_next().await.is_some() {}
        }
    }
}
