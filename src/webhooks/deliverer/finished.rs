//! An attempt's end, as the deliverer's loop books it: its endpoint's slot freed, its
//! outcome kept for the next record, and its endpoint's pace (which sizes the endpoint's
//! window) learnt from how long its request took.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use uuid::Uuid;

use crate::webhooks::attempt::Outcome;
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

/// Books an attempt's end; whether it counts toward the next claim (it was claimed).
pub(super) fn finished(
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
