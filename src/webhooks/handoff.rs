//! The hand-off from a replica's completers to its own deliverer. The batch settle that
//! makes tasks succeeded may claim the notifications it writes, for this replica (V31):
//! the rows are then exactly what the deliverer's claim would have left (pending,
//! claimed until the claim runs out, the attempt counted), and the deliverer sends them
//! without a claim statement of its own, which cost the database two thirds of a
//! delivery. Nothing else changes: a replica that dies before sending leaves the rows to
//! come due when the claim runs out, as any claim that died.
//!
//! A settle claims only while the deliverer has room (what it holds, what it has been
//! handed and not yet taken, and what settles in flight were offered stay under its
//! `--webhook-concurrency`), and never for an endpoint whose window in this replica is
//! full: those rows wait in the outbox for any replica's claim, so a slow receiver
//! does not collect claimed rows here that would wait out their claim.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, Notify};
use uuid::Uuid;

use crate::store::complete_many::ClaimedNotification;

/// What a batch settle may claim, while it runs. Dropping it gives its room back.
pub struct Offer {
    /// The claim token of every row the settle claims.
    pub token: Uuid,
    /// How long the claim holds.
    pub claim_for: Duration,
    /// Endpoints whose window in this replica is full: their rows are not claimed.
    pub busy: Arc<Vec<Uuid>>,
    /// When the claim was sent (the replica's clock, taken before the database's, so
    /// a row's wait is never under-counted).
    pub claimed_at: tokio::time::Instant,
    reserved: usize,
    gate: Arc<Gate>,
}

impl Drop for Offer {
    fn drop(&mut self) {
        let before = self.gate.offered.fetch_sub(self.reserved, Ordering::AcqRel);
        if before == self.reserved {
            self.gate.settled.notify_one();
        }
    }
}

/// The rows one settle claimed, as the deliverer receives them.
#[derive(Debug)]
pub struct Handed {
    pub token: Uuid,
    pub claimed_at: tokio::time::Instant,
    pub rows: Vec<ClaimedNotification>,
}

/// The completers' side: offers and hands. Cloning shares it.
#[derive(Clone)]
pub struct Handoff {
    gate: Arc<Gate>,
    rounds: mpsc::UnboundedSender<Handed>,
}

/// The deliverer's side: receives what was handed and says what it holds.
pub struct Inbox {
    gate: Arc<Gate>,
    rounds: mpsc::UnboundedReceiver<Handed>,
}

struct Gate {
    claim_for: Duration,
    /// Rows the deliverer may hold at once.
    limit: usize,
    /// Rows the deliverer holds (in flight or waiting for a slot), as it last said.
    held: AtomicUsize,
    /// Rows handed and not yet taken by the deliverer.
    queued: AtomicUsize,
    /// Rows reserved by offers whose settle is still running (one per task).
    offered: AtomicUsize,
    busy: Mutex<Arc<Vec<Uuid>>>,
    /// Signalled when the last settle offered ends.
    settled: Notify,
    /// The deliverer stopped: no more offers.
    closed: AtomicBool,
}

/// A hand-off between the completers and the deliverer of one replica, whose claims
/// hold `claim_for` and which holds at most `limit` rows.
pub fn channel(claim_for: Duration, limit: usize) -> (Handoff, Inbox) {
    let gate = Arc::new(Gate {
        claim_for,
        limit,
        held: AtomicUsize::new(0),
        queued: AtomicUsize::new(0),
        offered: AtomicUsize::new(0),
        busy: Mutex::new(Arc::new(Vec::new())),
        settled: Notify::new(),
        closed: AtomicBool::new(false),
    });
    let (sender, receiver) = mpsc::unbounded_channel();
    (
        Handoff {
            gate: gate.clone(),
            rounds: sender,
        },
        Inbox {
            gate,
            rounds: receiver,
        },
    )
}

impl Handoff {
    /// An offer for a settle of `tasks` tasks, if the deliverer has room: what it
    /// holds, what waits for it and what other settles were offered is under its limit.
    /// A settle may claim up to a batch past the limit (one row per task and endpoint);
    /// the window's test at each row's turn (`Window::in_time`) still holds.
    pub fn offer(&self, tasks: usize) -> Option<Offer> {
        let gate = &self.gate;
        if gate.closed.load(Ordering::Acquire) || self.rounds.is_closed() {
            return None;
        }
        let taken = gate.held.load(Ordering::Acquire)
            + gate.queued.load(Ordering::Acquire)
            + gate.offered.load(Ordering::Acquire);
        if taken >= gate.limit {
            return None;
        }
        gate.offered.fetch_add(tasks, Ordering::AcqRel);
        Some(Offer {
            token: Uuid::new_v4(),
            claim_for: gate.claim_for,
            busy: gate.busy.lock().expect("not poisoned").clone(),
            claimed_at: tokio::time::Instant::now(),
            reserved: tasks,
            gate: gate.clone(),
        })
    }

    /// Hands the rows the settle of `offer` claimed to the deliverer. Rows the
    /// deliverer can no longer take (it stopped meanwhile) come due when their claim
    /// runs out.
    pub fn hand(&self, offer: Offer, rows: Vec<ClaimedNotification>) {
        if rows.is_empty() {
            return;
        }
        let count = rows.len();
        self.gate.queued.fetch_add(count, Ordering::AcqRel);
        let handed = Handed {
            token: offer.token,
            claimed_at: offer.claimed_at,
            rows,
        };
        if self.rounds.send(handed).is_err() {
            self.gate.queued.fetch_sub(count, Ordering::AcqRel);
            tracing::warn!(
                rows = count,
                "the deliverer stopped: claimed notifications wait for their claim to run out"
            );
        }
    }
}

impl Inbox {
    /// The next rows handed, once some are.
    pub async fn recv(&mut self) -> Option<Handed> {
        let handed = self.rounds.recv().await?;
        self.took(&handed);
        Some(handed)
    }

    /// Rows handed already, without waiting.
    pub fn try_recv(&mut self) -> Option<Handed> {
        let handed = self.rounds.try_recv().ok()?;
        self.took(&handed);
        Some(handed)
    }

    fn took(&self, handed: &Handed) {
        self.gate
            .queued
            .fetch_sub(handed.rows.len(), Ordering::AcqRel);
    }

    /// What the deliverer holds now, and the endpoints whose window is full.
    pub fn holding(&self, rows: usize, busy: Vec<Uuid>) {
        self.gate.held.store(rows, Ordering::Release);
        let mut current = self.gate.busy.lock().expect("not poisoned");
        if **current != busy {
            *current = Arc::new(busy);
        }
    }

    /// No more offers; returns once the settles offered before have handed their rows
    /// (or `within` has passed), with every row handed and not yet taken.
    pub async fn close(&mut self, within: Duration) -> Vec<Handed> {
        self.gate.closed.store(true, Ordering::Release);
        let mut left = Vec::new();
        let deadline = tokio::time::Instant::now() + within;
        loop {
            while let Some(handed) = self.try_recv() {
                left.push(handed);
            }
            if self.gate.offered.load(Ordering::Acquire) == 0 {
                break;
            }
            tokio::select! {
                Some(handed) = self.rounds.recv() => {
                    self.took(&handed);
                    left.push(handed);
                }
                _ = self.gate.settled.notified() => {}
                _ = tokio::time::sleep_until(deadline) => break,
            }
        }
        while let Some(handed) = self.try_recv() {
            left.push(handed);
        }
        left
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(endpoint_id: Uuid) -> ClaimedNotification {
        ClaimedNotification {
            id: Uuid::now_v7(),
            endpoint_id,
            task_id: Uuid::now_v7(),
            created_at: chrono::Utc::now(),
        }
    }

    #[test]
    fn an_offer_needs_room_and_holds_its_share_until_dropped() {
        let (handoff, inbox) = channel(Duration::from_secs(60), 10);
        inbox.holding(9, Vec::new());
        let offer = handoff.offer(5).expect("room for one more row");
        assert_eq!(offer.claim_for, Duration::from_secs(60));
        assert!(handoff.offer(1).is_none(), "9 held and 5 offered");
        drop(offer);
        assert!(handoff.offer(1).is_some(), "the dropped offer's share is back");
        inbox.holding(10, Vec::new());
        assert!(handoff.offer(1).is_none(), "full");
    }

    #[tokio::test]
    async fn handed_rows_count_until_the_deliverer_takes_them() {
        let (handoff, mut inbox) = channel(Duration::from_secs(60), 3);
        let endpoint = Uuid::now_v7();
        let offer = handoff.offer(3).unwrap();
        let token = offer.token;
        handoff.hand(offer, vec![row(endpoint), row(endpoint), row(endpoint)]);
        assert!(handoff.offer(1).is_none(), "three handed, not yet taken");
        let handed = inbox.recv().await.unwrap();
        assert_eq!((handed.token, handed.rows.len()), (token, 3));
        assert!(handoff.offer(1).is_some(), "taken: the deliverer's count now says");
    }

    #[test]
    fn an_offer_carries_the_endpoints_whose_window_is_full() {
        let (handoff, inbox) = channel(Duration::from_secs(60), 100);
        let busy = vec![Uuid::now_v7()];
        inbox.holding(1, busy.clone());
        assert_eq!(*handoff.offer(1).unwrap().busy, busy);
        inbox.holding(0, Vec::new());
        assert!(handoff.offer(1).unwrap().busy.is_empty());
    }

    #[tokio::test]
    async fn closing_waits_for_the_settles_offered_and_refuses_new_offers() {
        let (handoff, mut inbox) = channel(Duration::from_secs(60), 100);
        let endpoint = Uuid::now_v7();
        let offered = handoff.offer(1).unwrap();
        let settle = {
            let handoff = handoff.clone();
            tokio::spawn(async move {
                // The settle ends after the deliverer began to close.
                tokio::task::yield_now().await;
                handoff.hand(offered, vec![row(endpoint)]);
            })
        };
        let left = inbox.close(Duration::from_secs(60)).await;
        settle.await.unwrap();
        assert_eq!(left.len(), 1, "the row of the settle in flight is returned");
        assert!(handoff.offer(1).is_none(), "closed");
    }

    #[tokio::test]
    async fn closing_with_a_settle_that_claimed_nothing_returns_at_once() {
        let (handoff, mut inbox) = channel(Duration::from_secs(60), 100);
        let offered = handoff.offer(1).unwrap();
        let settle = tokio::spawn(async move {
            tokio::task::yield_now().await;
            drop(offered);
        });
        // A day's bound: only the settle's end can let it return within the test.
        let left = inbox.close(Duration::from_secs(86_400)).await;
        settle.await.unwrap();
        assert!(left.is_empty());
    }
}
