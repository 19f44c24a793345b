//! The steps of the deliverer's loop besides waiting: a claim round, taking what the
//! hand-off holds, and closing at shutdown.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::finished::Books;
use super::handed::released;
use super::{Deliverer, Round};
use crate::webhooks::handoff::{Handed, Inbox};

impl Deliverer {
    /// One claim round: claims up to `free` due rows, reads their tasks and starts the
    /// attempts. `Some(full)` when the claim ran (`full`: it took all it could); `None`
    /// when it failed, which is logged once until a claim succeeds again.
    pub(super) async fn claim_round(
        &self,
        free: usize,
        books: &mut Books,
        failing: &mut bool,
        shutdown: &CancellationToken,
    ) -> Option<bool> {
        self.record(&mut books.outcomes).await;
        let claimed_at = tokio::time::Instant::now();
        match self.claim(free, &books.per_endpoint, &books.paces).await {
            Ok((claimed, tasks)) => {
                if *failing {
                    tracing::info!("webhook deliveries resumed");
                    *failing = false;
                }
                let full = claimed.len() == free;
                let claim = Round {
                    claimed,
                    tasks,
                    claimed_at,
                    handed: false,
                };
                self.start(claim, &mut books.flight, &mut books.per_endpoint, shutdown);
                Some(full)
            }
            Err(error) => {
                if !*failing {
                    tracing::warn!(error = %format!("{error:#}"), "claim webhook deliveries");
                    *failing = true;
                }
                None
            }
        }
    }

    /// Takes `first` and whatever else the hand-off holds now, and starts their attempts.
    pub(super) async fn take_handed(
        &self,
        first: Handed,
        inbox: &mut Option<Inbox>,
        books: &mut Books,
        shutdown: &CancellationToken,
    ) {
        let mut handed = vec![first];
        handed.extend(std::iter::from_fn(|| inbox.as_mut()?.try_recv()));
        let rows = handed.iter().map(|h| h.rows.len()).sum();
        let Books {
            flight,
            per_endpoint,
            outcomes,
            ..
        } = books;
        self.take(handed, flight, per_endpoint, outcomes, shutdown)
            .await;
        if let Some(inbox) = inbox {
            inbox.holding(
                books.flight.len(),
                self.busy(&books.per_endpoint, &books.paces),
            );
            inbox.took(rows);
        }
    }

    /// At shutdown: what was handed and not taken is released (due again at once), as
    /// the rows still waiting for a slot are; attempts in flight get a few seconds; the
    /// outcomes are recorded.
    pub(super) async fn close(&self, inbox: Option<Inbox>, mut books: Books) {
        if let Some(mut inbox) = inbox {
            for handed in inbox.close(Duration::from_secs(5)).await {
                books.outcomes.extend(released(&handed));
            }
        }
        let drain = async {
            while let Some(done) = books.flight.join_next().await {
                books.finish(done);
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(5), drain).await;
        self.record(&mut books.outcomes).await;
    }
}
