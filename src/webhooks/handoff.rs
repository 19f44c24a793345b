//! The hand-off from a replica's completers to its own deliverer. The batch complete that
//! makes tasks succeeded (`tasklane.complete_tasks_claiming`) may claim the notifications
//! it writes, for this replica: the rows are then exactly what the deliverer's claim
//! would have left (pending, claimed until the claim runs out, the attempt counted), and
//! the deliverer sends them without a claim statement of its own, which is most of what
//! a delivery costs the database. Nothing else changes: a replica that dies before
//! sending leaves the rows to come due when the claim runs out, as any claim that died.
//!
//! A settle claims only while the deliverer has room (what it holds and what it has
//! been handed and not yet taken is under its `--webhook-concurrency`; settles running
//! at once may each add their batch), and never for an endpoint whose window in this
//! replica is full: those rows wait in the outbox for any replica's claim, so a slow
//! receiver does not collect claimed rows here that would wait out their claim.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, Notify};
use uuid::Uuid;

use crate::store::complete_many::ClaimedNotification;

/// What a batch complete may claim, while it runs (dropped when it ends).
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
    gate: Arc<Gate>,
}

impl Drop for Offer {
    fn drop(&mut self) {
        if self.gate.offered.fetch_sub(1, Ordering::SeqCst) == 1 {
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
    /// Settles offered and still running (for `close`).
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
    /// An offer for a settle, if the deliverer has room: what it
    /// holds and what waits for it is under its limit. Settles running at once may
    /// each claim their batch past it (a row per task and endpoint): the room is not
    /// reserved, since most settles claim nothing (no endpoint for their tasks' apps) and
    /// a reserved batch kept the hand-off closed to the next one. Per endpoint the window
    /// bounds it (busy endpoints are never claimed for), and each row's turn is still
    /// tested against its claim (`Window::in_time`).
    pub fn offer(&self) -> Option<Offer> {
        let gate = &self.gate;
        if self.rounds.is_closed() {
            return None;
        }
        if gate.held.load(Ordering::SeqCst) + gate.queued.load(Ordering::SeqCst) >= gate.limit {
            return None;
        }
        // Counted before the test of `closed`, which `close` sets before it reads
        // `offered`: either this sees the deliverer closing, or the deliverer waits
        // for this settle's rows.
        gate.offered.fetch_add(1, Ordering::SeqCst);
        let offer = Offer {
            token: Uuid::new_v4(),
            claim_for: gate.claim_for,
            busy: gate.busy.lock().expect("not poisoned").clone(),
            claimed_at: tokio::time::Instant::now(),
            gate: gate.clone(),
        };
        if gate.closed.load(Ordering::SeqCst) {
            return None;
        }
        Some(offer)
    }

    /// Hands the rows the settle of `offer` claimed to the deliverer. Rows the
    /// deliverer can no longer take (it stopped meanwhile) come due when their claim
    /// runs out.
    pub fn hand(&self, offer: Offer, rows: Vec<ClaimedNotification>) {
        if rows.is_empty() {
            return;
        }
        let count = rows.len();
        self.gate.queued.fetch_add(count, Ordering::SeqCst);
        let handed = Handed {
            token: offer.token,
            claimed_at: offer.claimed_at,
            rows,
        };
        if self.rounds.send(handed).is_err() {
            self.gate.queued.fetch_sub(count, Ordering::SeqCst);
            tracing::warn!(
                rows = count,
                "the deliverer stopped: claimed notifications wait for their claim to run out"
            );
        }
    }
}

impl Inbox {
    /// The next rows handed, once some are. They count as handed until
    /// [`Inbox::took`] says the deliverer holds them.
    pub async fn recv(&mut self) -> Option<Handed> {
        self.rounds.recv().await
    }

    /// Rows handed already, without waiting; as [`Inbox::recv`].
    pub fn try_recv(&mut self) -> Option<Handed> {
        self.rounds.try_recv().ok()
    }

    /// `rows` received are now counted in what the deliverer holds ([`Inbox::holding`]
    /// first, so they are never counted nowhere) or were released.
    pub fn took(&self, rows: usize) {
        self.gate.queued.fetch_sub(rows, Ordering::SeqCst);
    }

    /// What the deliverer holds now, and the endpoints whose window is full.
    pub fn holding(&self, rows: usize, busy: Vec<Uuid>) {
        self.gate.held.store(rows, Ordering::SeqCst);
        let mut current = self.gate.busy.lock().expect("not poisoned");
        if **current != busy {
            *current = Arc::new(busy);
        }
    }

    /// No more offers; returns once the settles offered before have handed their rows
    /// (or `within` has passed), with every row handed and not yet taken.
    pub async fn close(&mut self, within: Duration) -> Vec<Handed> {
        self.gate.closed.store(true, Ordering::SeqCst);
        let mut left = Vec::new();
        let deadline = tokio::time::Instant::now() + within;
        loop {
            while let Some(handed) = self.try_recv() {
                left.push(handed);
            }
            if self.gate.offered.load(Ordering::SeqCst) == 0 {
                break;
            }
            tokio::select! {
                Some(handed) = self.rounds.recv() => left.push(handed),
                _ = self.gate.settled.notified() => {}
                _ = tokio::time::sleep_until(deadline) => break,
            }
        }
        while let Some(handed) = self.try_recv() {
            left.push(handed);
        }
        // Settles later than `within` wait out their claim (not lost: due after it).
        self.rounds.close();
        self.took(left.iter().map(|h| h.rows.len()).sum());
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
    fn an_offer_needs_room_in_what_the_deliverer_holds() {
        let (handoff, inbox) = channel(Duration::from_secs(60), 10);
        inbox.holding(9, Vec::new());
        let offer = handoff.offer().expect("room for one more row");
        assert_eq!(offer.claim_for, Duration::from_secs(60));
        assert!(handoff.offer().is_some(), "offers reserve no room");
        inbox.holding(10, Vec::new());
        assert!(handoff.offer().is_none(), "full");
    }

    #[tokio::test]
    async fn handed_rows_count_until_the_deliverer_takes_them() {
        let (handoff, mut inbox) = channel(Duration::from_secs(60), 3);
        let endpoint = Uuid::now_v7();
        let offer = handoff.offer().unwrap();
        let token = offer.token;
        handoff.hand(offer, vec![row(endpoint), row(endpoint), row(endpoint)]);
        assert!(handoff.offer().is_none(), "three handed, not yet taken");
        let handed = inbox.recv().await.unwrap();
        assert_eq!((handed.token, handed.rows.len()), (token, 3));
        assert!(
            handoff.offer().is_none(),
            "received, not yet counted as held"
        );
        inbox.holding(3, Vec::new());
        inbox.took(3);
        assert!(handoff.offer().is_none(), "held");
        inbox.holding(2, Vec::new());
        assert!(handoff.offer().is_some(), "one sent: room for one");
    }

    #[test]
    fn an_offer_carries_the_endpoints_whose_window_is_full() {
        let (handoff, inbox) = channel(Duration::from_secs(60), 100);
        let busy = vec![Uuid::now_v7()];
        inbox.holding(1, busy.clone());
        assert_eq!(*handoff.offer().unwrap().busy, busy);
        inbox.holding(0, Vec::new());
        assert!(handoff.offer().unwrap().busy.is_empty());
    }

    #[tokio::test]
    async fn closing_waits_for_the_settles_offered_and_refuses_new_offers() {
        let (handoff, mut inbox) = channel(Duration::from_secs(60), 100);
        let endpoint = Uuid::now_v7();
        let offered = handoff.offer().unwrap();
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
        assert!(handoff.offer().is_none(), "closed");
    }

    #[tokio::test]
    async fn closing_with_a_settle_that_claimed_nothing_returns_at_once() {
        let (handoff, mut inbox) = channel(Duration::from_secs(60), 100);
        let offered = handoff.offer().unwrap();
        let settle = tokio::spawn(async move {
            tokio::task::yield_now().await;
            drop(offered);
        });
        // A day's bound inside a minute's: only the settle's end lets it return.
        let left = tokio::time::timeout(
            Duration::from_secs(60),
            inbox.close(Duration::from_secs(86_400)),
        )
        .await
        .expect("close returned when the settle ended");
        settle.await.unwrap();
        assert!(left.is_empty());
    }
}
