//! Wake-ups: how idle claim loops learn of new work. A local submit wakes this replica's
//! loops directly; other replicas hear a (debounced) `NOTIFY`; the poll interval of each
//! loop is the fallback when notifications are lost or LISTEN is unavailable.
//!
//! A wake-up costs claim statements, so it is spent where it can find work:
//!
//! - It starts one claim among this replica's claim loops, not one in each: every loop
//!   hears it, and the first to take it claims; the others go back to waiting, and so
//!   does any loop whose wake-up came before a claim that has started since, or while
//!   a loop that took a turn still waits out its pace to claim (that claim will see
//!   what the wake-up announced). Under a steady stream the replica's loops thus claim
//!   at most once a pace between them, not once a pace each. A loop whose claim came
//!   back full asks another loop to claim too (more may be waiting), so a backlog still
//!   has every loop claiming.
//! - A submit tells the other replicas only when one of this replica's local claim
//!   loops serving its type is idle (waiting for a wake-up): that loop takes the task
//!   within its pace, and the other replicas' claims would find nothing. Under a stream
//!   that keeps the loops busy, or on a replica without workers, the `NOTIFY` goes out
//!   as before. A replica that dies between the submit's commit and its claim leaves the
//!   task to the others' polls: a poll interval of latency, never a task.
//! - A task that becomes claimable later (a retry after its backoff) wakes the loops
//!   when it does ([`due`]), from the replica that settled it.

mod due;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::sync::{watch, Notify};
use tokio_util::sync::CancellationToken;

use crate::store::WAKEUP_CHANNEL;

/// A wake-up signal shared by this replica's claim loops. Cloning shares it.
#[derive(Clone)]
pub struct Wakeup {
    generation: watch::Sender<u64>,
    notify: watch::Sender<u64>,
    /// Fallbacks settled here: the external loop that takes only fallbacks waits on
    /// this (and its poll interval) instead of every wake-up, so it costs no claim per
    /// submit. Fallbacks settled on other replicas reach it at its next poll.
    fallback: watch::Sender<u64>,
    /// The claim loops' shared state: the latest wake-up a claim has started after, the
    /// request for help of a loop with a backlog, and the idle loops.
    turns: Arc<Turns>,
    /// The moments known to bring work: retries whose backoff ends then.
    due: Arc<due::Due>,
}

#[derive(Default)]
struct Turns {
    started: AtomicU64,
    /// A loop has taken a turn and not started its claim yet (it waits out its pace):
    /// that claim will see what later wake-ups announce, so no other loop takes them.
    pending: AtomicBool,
    help: Notify,
    idle: Idle,
}

/// This replica's local-route claim loops waiting for a wake-up, and the types they
/// serve.
#[derive(Default)]
struct Idle {
    waiting: AtomicUsize,
    serves: RwLock<HashSet<String>>,
}

impl Default for Wakeup {
    fn default() -> Self {
        Wakeup {
            generation: watch::channel(0).0,
            notify: watch::channel(0).0,
            fallback: watch::channel(0).0,
            turns: Arc::default(),
            due: Arc::default(),
        }
    }
}

impl Wakeup {
    /// Wakes this replica's loops.
    pub fn wake_local(&self) {
        self.generation.send_modify(|g| *g = g.wrapping_add(1));
    }

    /// After a submit that created tasks of `task_types`: wakes this replica's loops, and
    /// the other replicas only when no idle local claim loop here serves every one of
    /// those types.
    pub fn wake_submitted<'a>(&self, task_types: impl IntoIterator<Item = &'a str>) {
        let idle = &self.turns.idle;
        let served = idle.waiting.load(Ordering::SeqCst) > 0 && {
            let serves = idle.serves.read().unwrap_or_else(|e| e.into_inner());
            task_types.into_iter().all(|t| serves.contains(t))
        };
        if served {
            self.wake_local();
        } else {
            self.wake_all();
        }
    }

    /// Says a local-route claim loop's claim starts now: wake-ups so far are covered
    /// by it.
    pub fn claiming(&self) {
        let now = *self.generation.borrow();
        self.turns.started.fetch_max(now, Ordering::SeqCst);
        self.turns.pending.store(false, Ordering::SeqCst);
    }

    /// Asks another local-route claim loop to claim too: the caller's claim came back
    /// full.
    pub fn ask_help(&self) {
        self.turns.help.notify_one();
    }

    /// Waits until this loop should claim. A local-route loop (`serves`, its types,
    /// not empty) takes turns with the replica's others: it waits for a wake-up no
    /// claim has covered yet, which it takes before any other loop, or for a request for
    /// help, and counts as idle meanwhile. Any other loop claims on every wake-up (its
    /// types are not theirs). `wakeups` is the loop's [`Wakeup::subscribe`].
    pub async fn turn(&self, wakeups: &mut watch::Receiver<u64>, serves: &[String]) {
        if serves.is_empty() {
            let _ = wakeups.changed().await;
            return;
        }
        let idle = &self.turns.idle;
        let known = {
            let served = idle.serves.read().unwrap_or_else(|e| e.into_inner());
            serves.iter().all(|t| served.contains(t))
        };
        if !known {
            let mut served = idle.serves.write().unwrap_or_else(|e| e.into_inner());
            served.extend(serves.iter().cloned());
        }
        let _waiting = Waiting::enter(&idle.waiting);
        loop {
            tokio::select! {
                changed = wakeups.changed() => {
                    if changed.is_err() {
                        return std::future::pending().await;
                    }
                    let woken = *wakeups.borrow_and_update();
                    let uncovered = self.turns.started.load(Ordering::SeqCst) < woken;
                    if uncovered && !self.turns.pending.swap(true, Ordering::SeqCst) {
                        return;
                    }
                }
                _ = self.turns.help.notified() => return,
            }
        }
    }

    /// Wakes this replica's loops and asks the notifier to tell the other replicas.
    pub fn wake_all(&self) {
        self.wake_local();
        self.notify.send_modify(|g| *g = g.wrapping_add(1));
    }

    /// Wakes every replica's loops when `delay` has passed (as [`Wakeup::wake_all`]):
    /// a task becomes claimable then. Kept by [`Wakeup::run_due`].
    pub fn wake_after(&self, delay: Duration) {
        self.due.after(delay);
    }

    /// Wakes the loops at the moments [`Wakeup::wake_after`] was given, until
    /// `shutdown`.
    pub async fn run_due(self, shutdown: CancellationToken) {
        let due = self.due.clone();
        due.run(|| self.wake_all(), shutdown).await
    }

    /// Wakes this replica's fallback-only loops: a task now waits for an external worker.
    pub fn wake_fallback(&self) {
        self.fallback.send_modify(|g| *g = g.wrapping_add(1));
    }

    /// A receiver a fallback-only claim loop waits on.
    pub fn subscribe_fallback(&self) -> watch::Receiver<u64> {
        self.fallback.subscribe()
    }

    /// A receiver a claim loop waits on; `changed()` never misses a wake that happened
    /// after the last `borrow_and_update()`.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// Sends one `NOTIFY` per burst of [`Wakeup::wake_all`] calls, at most one per
    /// `debounce`, until `shutdown`.
    pub async fn run_notifier(
        self,
        pool: crate::store::Pool,
        debounce: Duration,
        shutdown: CancellationToken,
    ) {
        let mut requests = self.notify.subscribe();
        loop {
            tokio::select! {
                changed = requests.changed() => if changed.is_err() { return },
                _ = shutdown.cancelled() => return,
            }
            requests.borrow_and_update();
            if let Ok(client) = pool.get().await {
                match crate::store::notify::wake_replicas_pooled(&client).await {
                    Ok(()) => crate::telemetry::outage::answered(),
                    Err(error) if crate::store::connect::lost::lost(&error).is_some() => {
                        let sqlstate = error.code().map(|code| code.code());
                        crate::telemetry::outage::failed("notify other replicas", &error, sqlstate)
                    }
                    Err(error) => tracing::warn!(%error, "notify other replicas"),
                }
            }
            tokio::time::sleep(debounce).await;
        }
    }

    /// Listens for other replicas' notifications on a dedicated connection and wakes the
    /// local loops (also whenever the LISTEN comes back: something may have been
    /// submitted meanwhile), until `shutdown`.
    pub async fn run_listener(self, database_url: String, shutdown: CancellationToken) {
        crate::store::listen::listen(
            database_url,
            WAKEUP_CHANNEL,
            "work wake-ups",
            self,
            shutdown,
        )
        .await
    }
}

/// Counts a loop as idle until dropped (its wait ended, or was cancelled).
struct Waiting<'a>(&'a AtomicUsize);

impl Waiting<'_> {
    fn enter(count: &AtomicUsize) -> Waiting<'_> {
        count.fetch_add(1, Ordering::SeqCst);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl crate::store::listen::Listener for Wakeup {
    fn listening(&mut self) {
        self.wake_local();
    }

    fn notified(&mut self, _payload: &str) {
        self.wake_local();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn types() -> Vec<String> {
        vec!["noop".to_owned()]
    }

    /// Whether `turn` ends within a moment (it ends at once, or never without a wake).
    async fn ends(turn: impl std::future::Future<Output = ()>) -> bool {
        tokio::time::timeout(Duration::from_millis(50), turn)
            .await
            .is_ok()
    }

    #[tokio::test]
    async fn a_wake_up_starts_one_loops_claim_not_each_loops() {
        let wakeup = Wakeup::default();
        let (mut a, mut b) = (wakeup.subscribe(), wakeup.subscribe());
        let serves = types();
        wakeup.wake_local();
        assert!(ends(wakeup.turn(&mut a, &serves)).await);
        assert!(!ends(wakeup.turn(&mut b, &serves)).await);
    }

    #[tokio::test]
    async fn a_wake_up_before_a_claim_started_is_covered_by_it() {
        let wakeup = Wakeup::default();
        let mut a = wakeup.subscribe();
        let serves = types();
        wakeup.wake_local();
        wakeup.claiming();
        assert!(!ends(wakeup.turn(&mut a, &serves)).await);
        wakeup.wake_local();
        assert!(ends(wakeup.turn(&mut a, &serves)).await);
    }

    #[tokio::test]
    async fn a_wake_up_while_a_loop_waits_out_its_pace_is_left_to_it() {
        let wakeup = Wakeup::default();
        let (mut a, mut b) = (wakeup.subscribe(), wakeup.subscribe());
        let serves = types();
        wakeup.wake_local();
        assert!(ends(wakeup.turn(&mut a, &serves)).await);
        // `a` has not started its claim: the next wake-up is its too.
        wakeup.wake_local();
        assert!(!ends(wakeup.turn(&mut b, &serves)).await);
        wakeup.claiming();
        wakeup.wake_local();
        assert!(ends(wakeup.turn(&mut b, &serves)).await);
    }

    #[tokio::test]
    async fn a_full_claim_asks_another_loop_to_claim() {
        let wakeup = Wakeup::default();
        let mut b = wakeup.subscribe();
        wakeup.ask_help();
        assert!(ends(wakeup.turn(&mut b, &types())).await);
    }

    #[tokio::test]
    async fn an_external_loop_claims_on_every_wake_up() {
        let wakeup = Wakeup::default();
        let (mut local, mut external) = (wakeup.subscribe(), wakeup.subscribe());
        wakeup.wake_local();
        assert!(ends(wakeup.turn(&mut local, &types())).await);
        assert!(ends(wakeup.turn(&mut external, &[])).await);
    }

    #[tokio::test]
    async fn a_submit_tells_other_replicas_only_without_an_idle_loop_for_its_type() {
        let wakeup = Wakeup::default();
        let mut notifies = wakeup.notify.subscribe();
        wakeup.wake_submitted(["noop"]);
        assert!(notifies.has_changed().unwrap(), "no loop is idle");
        notifies.borrow_and_update();

        // Two idle loops: a wake-up takes one of them, the other goes on waiting.
        let idle: Vec<_> = (0..2)
            .map(|_| {
                let waiter = wakeup.clone();
                tokio::spawn(async move {
                    let mut wakeups = waiter.subscribe();
                    waiter.turn(&mut wakeups, &types()).await;
                })
            })
            .collect();
        let waiting = |n| wakeup.turns.idle.waiting.load(Ordering::SeqCst) == n;
        while !waiting(2) {
            tokio::task::yield_now().await;
        }
        wakeup.wake_submitted(["sleep"]);
        assert!(
            notifies.has_changed().unwrap(),
            "the idle loops serve noop only"
        );
        notifies.borrow_and_update();
        while !waiting(1) {
            tokio::task::yield_now().await;
        }
        // The loop that took the turn starts its claim.
        wakeup.claiming();
        wakeup.wake_submitted(["noop"]);
        assert!(!notifies.has_changed().unwrap(), "an idle loop takes it");
        for loop_ in idle {
            loop_.await.unwrap();
        }
    }
}
