//! An attempt's end, as the deliverer's loop books it: its endpoint's slot freed, its
//! outcome kept for the next record, and its endpoint's pace (which sizes the endpoint's
//! window) learnt from how long its request took.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use uuid::Uuid;

use crate::webhooks::delivery_attempt::Outcome;
use crate::webhooks::window;

/// An attempt's end.
pub(super) struct Done {
    pub(super) endpoint_id: Uuid,
    /// How long its request took, when one was sent.
    pub(super) took: Option<Duration>,
    /// Its outcome, unless it was recorded already.
    pub(super) outcome: Option<Outcome>,
    /// Its row was handed: its end does not count toward the next claim (the
    /// deliverer claims for what its claims took; a wake-up says when more is due).
    pub(super) handed: bool,
}

/// How many endpoints' paces are kept; past it they are forgotten and learnt again.
const PACES_KEPT: usize = 10_000;

/// What the deliverer's loop keeps between rounds.
#[derive(Default)]
pub(super) struct Books {
    /// The attempts in flight.
    pub(super) flight: JoinSet<Done>,
    /// Outcomes not yet recorded.
    pub(super) outcomes: Vec<Outcome>,
    /// Per endpoint: attempts held (in flight or waiting for a slot) and its slots.
    pub(super) per_endpoint: HashMap<Uuid, (usize, Arc<Semaphore>)>,
    /// Each endpoint's recent slow attempt (`window::pace`), which sizes its window.
    pub(super) paces: HashMap<Uuid, Duration>,
    /// When the oldest outcome not yet recorded was first seen.
    unrecorded_since: Option<tokio::time::Instant>,
}

impl Books {
    /// When the outcomes waiting should be recorded: `after` the oldest was first seen
    /// (seen now if it is new); None when none wait.
    pub(super) fn record_at(&mut self, after: Duration) -> Option<tokio::time::Instant> {
        if self.outcomes.is_empty() {
            self.unrecorded_since = None;
            return None;
        }
        let since = *self
            .unrecorded_since
            .get_or_insert_with(tokio::time::Instant::now);
        Some(since + after)
    }

    /// Books an attempt's end; whether it counts toward the next claim (it was claimed).
    pub(super) fn finish(&mut self, done: Result<Done, tokio::task::JoinError>) -> bool {
        finished(
            done,
            &mut self.per_endpoint,
            &mut self.paces,
            &mut self.outcomes,
        )
    }

    /// Books every attempt that has ended; how many count toward the next claim.
    pub(super) fn reap(&mut self) -> usize {
        let mut counted = 0;
        while let Some(done) = self.flight.try_join_next() {
            if self.finish(done) {
                counted += 1;
            }
        }
        counted
    }
}

fn finished(
    done: Result<Done, tokio::task::JoinError>,
    per_endpoint: &mut HashMap<Uuid, (usize, Arc<Semaphore>)>,
    paces: &mut HashMap<Uuid, Duration>,
    outcomes: &mut Vec<Outcome>,
) -> bool {
    let Ok(Done {
        endpoint_id,
        took,
        outcome,
        handed,
    }) = done
    else {
        return false;
    };
    if let Some(took) = took {
        if paces.len() >= PACES_KEPT && !paces.contains_key(&endpoint_id) {
            paces.clear();
        }
        let pace = window::pace(paces.get(&endpoint_id).copied(), took);
        paces.insert(endpoint_id, pace);
    }
    outcomes.extend(outcome);
    if let Some(entry) = per_endpoint.get_mut(&endpoint_id) {
        entry.0 -= 1;
        if entry.0 == 0 {
            per_endpoint.remove(&endpoint_id);
        }
    }
    !handed
}
