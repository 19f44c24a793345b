//! The deliverer: the maintenance role's loop that sends the outbox. Any number of
//! replicas run it at once; rows are claimed with SKIP LOCKED and a short claim, so a
//! replica killed mid-delivery leaves rows that another replica sends once the claim
//! runs out (at least once; the receiver sees the same `webhook-id`). It wakes on the
//! NOTIFY of the statements that write unclaimed rows to the outbox (every replica
//! LISTENs), polls as the fallback, and bounds the rows held per replica and the
//! attempts in flight per endpoint. Rows this replica's own batch completes claimed for it
//! arrive through the hand-off (`webhooks::handoff`; their side here is `handed.rs`) and
//! are sent the same way, without a claim statement.

mod finished;
mod handed;
mod steps;

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use chrono::{DateTime, Utc};
use opentelemetry::metrics::{Meter, ObservableGauge};
use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::delivery_attempt::{Outcome, Shared};
use super::guard::AddressGuard;
use super::handoff::Inbox;
use super::schedule::RetrySchedule;
use super::sender::Sender;
use super::window::Window;
use crate::maintenance::start::Start;
use crate::store;
use crate::store::outbox::{self, ClaimLimits, Claimed, Settlement, WEBHOOKS_CHANNEL};
use crate::task::record::TaskRecord;
use crate::telemetry::Instruments;
use finished::{Books, Done};
use handed::handed_next;

/// How a replica delivers.
#[derive(Debug, Clone)]
pub struct DeliveryConfig {
    /// Notifications this replica holds at once, in flight or waiting for a slot.
    pub concurrency: usize,
    /// Attempts in flight at once per endpoint in this replica.
    pub per_endpoint: usize,
    /// How long a claimed row stays with this replica before another may send it.
    pub claim_for: Duration,
    /// How long an attempt may take.
    pub timeout: Duration,
    pub schedule: RetrySchedule,
    pub guard: AddressGuard,
    /// How often to look for due rows without a NOTIFY.
    pub poll_interval: Duration,
    /// For the LISTEN connection; `None`: poll only.
    pub listen_url: Option<String>,
}

impl Default for DeliveryConfig {
    fn default() -> Self {
        DeliveryConfig {
            concurrency: 128,
            per_endpoint: 8,
            claim_for: Duration::from_secs(60),
            timeout: Duration::from_secs(15),
            schedule: RetrySchedule::default(),
            guard: AddressGuard::default(),
            poll_interval: Duration::from_secs(1),
            listen_url: None,
        }
    }
}

/// How often the pending-notification gauges are refreshed.
const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// The longest an outcome waits to be recorded with others.
const RECORD_AFTER: Duration = Duration::from_millis(100);
/// Outcomes that are recorded at once, whatever their age.
const RECORD_BATCH: usize = 256;

/// Sleeps until `at`, or forever when there is none.
async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

pub struct Deliverer {
    config: DeliveryConfig,
    /// Each endpoint's window of claimed rows, from `config`.
    window: Window,
    shared: Arc<Shared>,
    wake: Arc<Notify>,
    pending: Arc<AtomicI64>,
    oldest: Arc<AtomicI64>,
    _gauges: [ObservableGauge<i64>; 2],
    /// What this replica's batch completes claimed for it ([`Deliverer::with_handoff`]).
    inbox: Option<Inbox>,
    /// Shares the poll with the other maintaining replicas ([`Deliverer::with_spread`]).
    spread: crate::maintenance::spread::Spread,
    /// Where the next claim reads the due index from: the earliest row the last claim
    /// saw pending, or a margin before its clock (`Start::pending`).
    from: Start<DateTime<Utc>>,
}

impl Deliverer {
    pub fn new(
        pool: crate::store::Pool,
        config: DeliveryConfig,
        meter: &Meter,
        instruments: Instruments,
    ) -> anyhow::Result<Self> {
        // Otherwise every claimed row would be released unsent, round after round.
        anyhow::ensure!(
            config.claim_for > config.timeout,
            "a webhook claim ({:?}) must outlast an attempt's timeout ({:?})",
            config.claim_for,
            config.timeout
        );
        let sender = Sender::new(config.guard.clone(), config.timeout)?;
        let pending = Arc::new(AtomicI64::new(0));
        let oldest = Arc::new(AtomicI64::new(0));
        let (p, o) = (pending.clone(), oldest.clone());
        let gauges = [
            meter
                .i64_observable_gauge("tasklane.webhooks.pending")
                .with_description("Notifications not yet delivered (cluster-wide)")
                .with_callback(move |observer| observer.observe(p.load(Ordering::Relaxed), &[]))
                .build(),
            meter
                .i64_observable_gauge("tasklane.webhooks.oldest_pending")
                .with_unit("s")
                .with_description("Age of the oldest notification not yet delivered (cluster-wide)")
                .with_callback(move |observer| observer.observe(o.load(Ordering::Relaxed), &[]))
                .build(),
        ];
        Ok(Deliverer {
            shared: Arc::new(Shared {
                pool,
                sender,
                schedule: config.schedule.clone(),
                instruments,
            }),
            window: Window {
                slots: config.per_endpoint.max(1),
                claim_for: config.claim_for,
                timeout: config.timeout,
            },
            config,
            wake: Arc::new(Notify::new()),
            pending,
            oldest,
            _gauges: gauges,
            inbox: None,
            spread: Default::default(),
            from: Start::default(),
        })
    }

    /// The same deliverer, also sending what this replica's batch completes claim for it
    /// (the other end of `inbox` goes to the service: `Tasklane::with_webhook_handoff`).
    pub fn with_handoff(mut self, inbox: Inbox) -> Self {
        self.inbox = Some(inbox);
        self
    }

    /// The same deliverer, polling the outbox every `poll_interval × maintainers`: the
    /// outbox is the cluster's, and a row the poll finds (a retry come due, a NOTIFY
    /// missed) is sent by whichever replica looks first.
    pub fn with_spread(mut self, spread: crate::maintenance::spread::Spread) -> Self {
        self.spread = spread;
        self
    }

    /// Claims, sends and records until `shutdown`; attempts in flight then get a few
    /// seconds, the rest come back to the outbox when their claim runs out.
    ///
    /// Work goes in rounds: a claim (with the targets), one read of the tasks' views,
    /// the attempts, and one settle statement for the outcomes gathered meanwhile. The
    /// next claim comes when as many claimed rows have finished as half of what the
    /// replica held after the last claim, or on a wake-up (NOTIFY, the poll), not after
    /// every attempt: a claim and a settle per delivery cost the drain more than the
    /// delivery itself. Handed rows (`handoff`) are read and started as they arrive;
    /// their ends bring no claim, not even the last one's (they wake no one either:
    /// nothing of theirs is due).
    pub async fn run(mut self, shutdown: CancellationToken) {
        let mut inbox = self.inbox.take();
        if let Some(url) = self.config.listen_url.clone() {
            tokio::spawn(crate::store::listen::listen(
                url,
                WEBHOOKS_CHANNEL,
                "webhook wake-ups",
                Waker(self.wake.clone()),
                shutdown.clone(),
            ));
        }
        let mut books = Books::default();
        let mut sampled = tokio::time::Instant::now() - SAMPLE_EVERY;
        let mut failing = false;
        // Look for due rows now (start, wake-up, poll, a round half done).
        let mut look = true;
        // Claimed attempts finished since the last claim, and how many finish a round.
        let (mut finished_since, mut round) = (0usize, 1usize);
        while !shutdown.is_cancelled() {
            if sampled.elapsed() >= SAMPLE_EVERY {
                self.sample().await;
                sampled = tokio::time::Instant::now();
            }
            let free = self.config.concurrency.saturating_sub(books.flight.len());
            if look && free > 0 {
                look = false;
                if let Some(full) = self
                    .claim_round(free, &mut books, &mut failing, &shutdown)
                    .await
                {
                    // A full claim: more may be due once slots free up.
                    look = full;
                    finished_since = 0;
                    round = (books.flight.len() / 2).max(1);
                }
            }
            // Outcomes are recorded together: a round's, or those of handed rows
            // (one at a time under a steady trickle) once the oldest has waited a
            // moment. Nothing waits on the record; the claims last far longer.
            let record_at = books.record_at(RECORD_AFTER);
            if record_at.is_some_and(|at| at <= tokio::time::Instant::now())
                || books.outcomes.len() >= RECORD_BATCH
            {
                self.record(&mut books.outcomes).await;
            }
            let record_at = books.record_at(RECORD_AFTER);
            tokio::select! {
                _ = sleep_until_some(record_at) => {}
                _ = self.wake.notified() => look = true,
                _ = tokio::time::sleep(self.spread.wait(self.config.poll_interval)) => look = true,
                Some(done) = books.flight.join_next(), if !books.flight.is_empty() => {
                    if books.finish(done) {
                        finished_since += 1;
                    }
                }
                Some(handed) = handed_next(&mut inbox) => {
                    self.take_handed(handed, &mut inbox, &mut books, &shutdown).await;
                }
                _ = shutdown.cancelled() => {}
            }
            finished_since += books.reap();
            // A flight that emptied of handed rows alone brings no claim: what the
            // settles hand over is claimed already, and what they leave in the outbox
            // wakes the deliverers (NOTIFY) or waits for the poll.
            if finished_since >= round || (books.flight.is_empty() && finished_since > 0) {
                look = true;
            }
            if let Some(inbox) = &inbox {
                inbox.holding(
                    books.flight.len(),
                    self.busy(&books.per_endpoint, &books.paces),
                );
            }
        }
        self.close(inbox, books).await;
    }

    /// Records a round's outcomes in one statement. On failure they are dropped: the
    /// claims run out and the rows are sent again (at least once).
    async fn record(&self, outcomes: &mut Vec<Outcome>) {
        if outcomes.is_empty() {
            return;
        }
        let result = async {
            let client = self.shared.pool.get().await.context("connection")?;
            outbox::settle_many(&client, outcomes)
                .await
                .context("settle")
        }
        .await;
        if let Err(error) = result {
            tracing::warn!(count = outcomes.len(), error = %format!("{error:#}"), "record webhook deliveries");
        }
        outcomes.clear();
    }

    /// Claims up to `free` rows, each endpoint up to its window (`window::Window`, from
    /// its pace) less what this replica holds of it, with the views of their tasks.
    async fn claim(
        &self,
        free: usize,
        per_endpoint: &HashMap<Uuid, (usize, Arc<Semaphore>)>,
        paces: &HashMap<Uuid, Duration>,
    ) -> anyhow::Result<(Vec<Claimed>, HashMap<Uuid, TaskRecord>)> {
        let window = self.window;
        let held = |id: &Uuid| per_endpoint.get(id).map_or(0, |(n, _)| *n);
        let default = window.rows(None) as i64;
        // Only the endpoints whose allowance is not the default are listed.
        let allowance = per_endpoint
            .keys()
            .chain(paces.keys().filter(|id| !per_endpoint.contains_key(id)))
            .map(|id| {
                let rows = window.rows(paces.get(id).copied());
                (*id, rows as i64 - held(id) as i64)
            })
            .filter(|(_, rows)| *rows != default)
            .collect();
        let client = self.shared.pool.get().await.context("connection")?;
        let limits = ClaimLimits {
            max: free as i64,
            default_allowance: default,
            claim_for: self.config.claim_for,
            allowance,
        };
        let from = self.from.next(std::time::Instant::now());
        let claim = outbox::claim(&client, &limits, from)
            .await
            .context("claim")?;
        if let Some(clock) = claim.clock {
            self.from.pending(clock, claim.pending_from);
        }
        let claimed = claim.rows;
        if claimed.is_empty() {
            return Ok(Default::default());
        }
        let tasks = views(&client, claimed.iter().map(|c| c.task_id).collect()).await?;
        Ok((claimed, tasks))
    }

    /// Starts a round's attempts, each when a slot of its endpoint is free. A row whose
    /// turn comes too late to be answered within its claim (`Window::in_time`), or that
    /// still waits at shutdown, is released unsent rather than left to wait out its
    /// claim (the last round records those of a shutdown).
    fn start(
        &self,
        round: Round,
        flight: &mut JoinSet<Done>,
        per_endpoint: &mut HashMap<Uuid, (usize, Arc<Semaphore>)>,
        shutdown: &CancellationToken,
    ) {
        let window = self.window;
        let Round {
            claimed,
            tasks,
            claimed_at,
            handed,
        } = round;
        for row in claimed {
            let entry = per_endpoint
                .entry(row.endpoint_id)
                .or_insert_with(|| (0, Arc::new(Semaphore::new(window.slots))));
            entry.0 += 1;
            let permits = entry.1.clone();
            // Several endpoints may be notified of one task in one batch.
            let task = tasks.get(&row.task_id).cloned();
            let shared = self.shared.clone();
            let shutdown = shutdown.clone();
            flight.spawn(async move {
                let endpoint_id = row.endpoint_id;
                let released = Some((row.id, row.claim_token, Settlement::Released));
                let done = |took, outcome| Done {
                    endpoint_id,
                    took,
                    outcome,
                    handed,
                };
                let _permit = tokio::select! {
                    permit = permits.acquire_owned() => permit,
                    _ = shutdown.cancelled() => return done(None, released),
                };
                let started = tokio::time::Instant::now();
                if !window.in_time(started - claimed_at) {
                    shared.instruments.webhook_delivery("released");
                    return done(None, released);
                }
                // Only an answer (or its absence) says anything of the receiver's pace.
                let sends = !row.target.disabled && task.is_some();
                let outcome = shared.attempt(row, task).await;
                done(sends.then(|| started.elapsed()), outcome)
            });
        }
    }

    async fn sample(&self) {
        let Ok(client) = self.shared.pool.get().await else {
            return;
        };
        // Counted from the claims' start: under a held snapshot the due index keeps the
        // entry of every notification delivered since, and a count from its front
        // would step over them all.
        let from = self.from.at();
        if let Ok(overview) = outbox::overview(store::client(&client), from).await {
            self.pending.store(overview.pending, Ordering::Relaxed);
            self.oldest
                .store(overview.oldest_pending_seconds, Ordering::Relaxed);
        }
    }
}

/// The views of tasks `task_ids` as an app token reads them, with their attempts' usage
/// and provenance: two statements sent together, answered in one round trip.
async fn views(
    client: &crate::store::Pooled,
    mut task_ids: Vec<Uuid>,
) -> anyhow::Result<HashMap<Uuid, TaskRecord>> {
    task_ids.sort_unstable();
    task_ids.dedup();
    let (mut tasks, mut summaries) = tokio::try_join!(
        async { outbox::tasks(client, &task_ids).await.context("tasks") },
        async {
            store::attempts::summaries(store::client(client), &task_ids)
                .await
                .context("attempt summaries")
        },
    )?;
    for (id, task) in tasks.iter_mut() {
        task.attempts = Some(summaries.remove(id).unwrap_or_default());
    }
    Ok(tasks)
}

/// A claim's rows with their tasks' views, and when the claim was sent (the replica's
/// clock, taken before the database's, so a row's wait is never under-counted).
struct Round {
    claimed: Vec<Claimed>,
    tasks: HashMap<Uuid, TaskRecord>,
    claimed_at: tokio::time::Instant,
    /// Handed by this replica's settles, not claimed by the deliverer.
    handed: bool,
}

/// Wakes the loop on every NOTIFY, and when the LISTEN (re)starts.
struct Waker(Arc<Notify>);

impl crate::store::listen::Listener for Waker {
    fn listening(&mut self) {
        self.0.notify_one();
    }

    fn notified(&mut self, _payload: &str) {
        self.0.notify_one();
    }
}
