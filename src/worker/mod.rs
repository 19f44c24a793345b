//! The in-process worker: claim loops that take batches of tasks, run each attempt with
//! heartbeats and a timeout, settle it fenced on its lease, and at shutdown hand back
//! what could not finish in the grace period.

pub mod attempt;
pub mod completer;
pub mod executors;
pub mod handler;
pub mod heartbeats;
pub mod pace;
pub mod registry;
mod running;

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::maintenance::spread::Spread;
use crate::service::{Claimant, ClaimedTask, Tasklane};
use crate::task::Locality;

pub use completer::Completer;
pub use handler::{Handler, HandlerError, Stop, TaskContext};
pub use registry::{ClaimSets, HandlerRegistry};
use running::Running;

/// How one claim loop behaves.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Identifies the loop in the task rows (`worker_id`).
    pub worker_id: String,
    /// The replica this loop belongs to (cold-start recovery scope).
    pub replica_id: Uuid,
    pub locality: Locality,
    /// Attempts running at once in this loop.
    pub concurrency: usize,
    /// Most tasks taken by one claim statement.
    pub claim_batch: usize,
    /// The fallback when no wake-up arrives.
    pub poll_interval: Duration,
    /// How many replicas share the idle polls: an idle loop polls every `poll_interval`
    /// × that count, jittered (the default, one, polls every interval). The registry
    /// keeps it when wake-ups travel between replicas; without them each replica polls
    /// on its own.
    pub polls: Spread,
    /// How long running attempts may finish after shutdown begins before their leases
    /// are handed back.
    pub shutdown_grace: Duration,
}

/// One claim loop with its own slots.
pub struct Worker {
    config: WorkerConfig,
    tasklane: Tasklane,
    handlers: Arc<HandlerRegistry>,
    sets: ClaimSets,
    /// The group commit its successes settle through, when shared with other loops.
    completer: Option<Completer>,
}

impl Worker {
    /// A claim loop settling through `tasklane`, running the types `handlers` has
    /// (as [`HandlerRegistry::claim_sets`] assigns them to the loop's locality).
    pub fn new(config: WorkerConfig, tasklane: Tasklane, handlers: Arc<HandlerRegistry>) -> Self {
        let sets = handlers.claim_sets(config.locality, false);
        Worker {
            config,
            tasklane,
            handlers,
            sets,
            completer: None,
        }
    }

    /// The same loop, settling its successes through `completer`: a replica's loops
    /// share one, so their completions commit together instead of in a batch per loop
    /// (a replica's commits would otherwise grow with its loops, and a cluster's with its
    /// replicas).
    pub fn settling_through(mut self, completer: Completer) -> Self {
        self.completer = Some(completer);
        self
    }

    /// The external loop a local replica runs beside its local one, for `openai`
    /// types only: their fallbacks, and the types with only external routes. `None`
    /// when no type needs one.
    pub fn routed_external(
        mut config: WorkerConfig,
        tasklane: Tasklane,
        handlers: Arc<HandlerRegistry>,
    ) -> Option<Self> {
        let sets = handlers.claim_sets(Locality::External, true);
        if sets.is_empty() {
            return None;
        }
        config.locality = Locality::External;
        config.worker_id.push_str("/external");
        Some(Worker {
            config,
            tasklane,
            handlers,
            sets,
            completer: None,
        })
    }

    /// Claims and runs tasks until `shutdown`; then waits up to the grace period for
    /// running attempts and hands back the leases of the rest.
    pub async fn run(self, shutdown: CancellationToken) {
        let _running = self.tasklane.liveness().enter();
        if self.sets.is_empty() {
            return shutdown.cancelled().await;
        }
        // A loop that takes only fallbacks wakes on fallbacks (and its poll), not on
        // every submit: it would cost a claim statement per wake-up for nothing. The
        // others take turns (`Wakeup::turn`): a wake-up starts one loop's claim.
        let wakeup = self.tasklane.wakeup().clone();
        let mut fallbacks = self
            .sets
            .all
            .is_empty()
            .then(|| wakeup.subscribe_fallback());
        let mut wakeups = wakeup.subscribe();
        // The types this loop takes turns for and counts as idle for (submits of them
        // need not wake the other replicas while it waits). An external loop claims
        // only what may leave the premises: it vouches for nothing, and claims on every
        // wake-up as before.
        let serves: Vec<String> = match self.config.locality {
            crate::task::Locality::Local => self.sets.all.clone(),
            _ => Vec::new(),
        };
        let mut running = Running::start(
            &self.tasklane,
            &self.handlers,
            (self.config.concurrency, self.config.locality),
            self.completer.clone(),
        );
        let claimant = Claimant {
            worker_id: &self.config.worker_id,
            locality: self.config.locality,
            replica_id: Some(self.config.replica_id),
        };
        // Whether the last claim came back full: there is a backlog to keep up with.
        let mut backlog = false;
        let mut last_claim: Option<tokio::time::Instant> = None;
        let mut pace = pace::Pace::default();
        while !shutdown.is_cancelled() {
            let batch = self.config.claim_batch;
            let Some(free) = running.free_slots(backlog, batch, &shutdown).await else {
                break;
            };
            if free == 0 {
                continue;
            }
            if !backlog {
                if let Some(last) = last_claim {
                    tokio::select! {
                        _ = tokio::time::sleep_until(last + pace.interval()) => {}
                        _ = shutdown.cancelled() => break,
                    }
                }
            }
            let started = tokio::time::Instant::now();
            last_claim = Some(started);
            // This claim sees whatever the wake-ups so far announced.
            if let Some(fallbacks) = &mut fallbacks {
                fallbacks.borrow_and_update();
            } else {
                wakeups.borrow_and_update();
                // Only loops that take turns cover the others' wake-ups.
                if !serves.is_empty() {
                    wakeup.claiming();
                }
            }
            let claimed = match self.claim(&claimant, free as i64).await {
                Ok(claimed) => {
                    pace.observe(started.elapsed());
                    crate::telemetry::outage::answered();
                    claimed
                }
                Err(error) if crate::service::ServiceError::unavailable(&error) => {
                    crate::telemetry::outage::failed("claim tasks", &format!("{error:#}"), None);
                    Vec::new()
                }
                Err(error) => {
                    tracing::warn!(error = %format!("{error:#}"), "claim tasks");
                    Vec::new()
                }
            };
            backlog = claimed.len() == free;
            running.run_all(claimed).await;
            if backlog {
                if fallbacks.is_none() && !serves.is_empty() {
                    wakeup.ask_help();
                }
                continue;
            }
            // A loop with every slot taken takes no turn (it could not claim until a
            // slot frees; a loop with room should) and vouches for nothing.
            let turns_for: &[String] = if running.has_room() { &serves } else { &[] };
            let woken = async {
                match &mut fallbacks {
                    Some(fallbacks) => {
                        let _ = fallbacks.changed().await;
                    }
                    None => wakeup.turn(&mut wakeups, turns_for).await,
                }
            };
            if !self.wait(woken, &shutdown).await {
                break;
            }
        }
        running.drain(self.config.shutdown_grace).await;
    }

    /// Waits for `woken`, or this replica's share of the poll interval; false when
    /// `shutdown` comes first.
    async fn wait(
        &self,
        woken: impl std::future::Future<Output = ()>,
        shutdown: &CancellationToken,
    ) -> bool {
        tokio::select! {
            _ = woken => true,
            _ = tokio::time::sleep(self.config.polls.wait(self.config.poll_interval)) => true,
            _ = shutdown.cancelled() => false,
        }
    }

    /// Claims up to `limit`: the waiting fallbacks of local-first types first (they
    /// have spent attempts already), then the loop's other types.
    async fn claim(&self, claimant: &Claimant<'_>, limit: i64) -> anyhow::Result<Vec<ClaimedTask>> {
        let mut claimed = Vec::new();
        if !self.sets.fallbacks.is_empty() {
            claimed = self
                .tasklane
                .claim_fallbacks(claimant, &self.sets.fallbacks, limit)
                .await?;
        }
        let left = limit - claimed.len() as i64;
        if !self.sets.all.is_empty() && left > 0 {
            let more = self
                .tasklane
                .claim(claimant, None, &self.sets.all, left)
                .await?;
            claimed.extend(more);
        }
        Ok(claimed)
    }
}
