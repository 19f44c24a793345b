//! The deliverer's side of the hand-off (`webhooks::handoff`): the rows this replica's
//! batch completes claimed for it, read (targets and views in one round trip) and started
//! as one round, and the endpoints whose window is full, which a settle must not claim
//! for.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::{views, Deliverer, Done, Round};
use crate::store::outbox::{self, Claimed, Settlement};
use crate::webhooks::delivery_attempt::Outcome;
use crate::webhooks::handoff::{Handed, Inbox};

impl Deliverer {
    /// Starts the rows handed to this replica (claimed by its batch completes) as one
    /// round, with their targets and their tasks' views read in one round trip. A row
    /// whose endpoint is gone is released (the next claim deletes it with the
    /// endpoint's log); if the reads fail, every row is released.
    pub(super) async fn take(
        &self,
        handed: Vec<Handed>,
        flight: &mut JoinSet<Done>,
        per_endpoint: &mut HashMap<Uuid, (usize, Arc<Semaphore>)>,
        outcomes: &mut Vec<Outcome>,
        shutdown: &CancellationToken,
    ) {
        let read = async {
            let client = self.shared.pool.get().await.context("connection")?;
            let mut endpoint_ids: Vec<Uuid> = handed
                .iter()
                .flat_map(|h| h.rows.iter().map(|r| r.endpoint_id))
                .collect();
            endpoint_ids.sort_unstable();
            endpoint_ids.dedup();
            let task_ids = handed
                .iter()
                .flat_map(|h| h.rows.iter().map(|r| r.task_id))
                .collect();
            // Sent together, answered in one round trip (the client pipelines them).
            tokio::try_join!(
                async {
                    outbox::targets(&client, &endpoint_ids)
                        .await
                        .context("targets")
                },
                views(&client, task_ids),
            )
        };
        let (targets, tasks) = match read.await {
            Ok(read) => read,
            Err(error) => {
                tracing::warn!(error = %format!("{error:#}"), "read handed webhook deliveries");
                outcomes.extend(handed.iter().flat_map(released));
                return;
            }
        };
        let Some(claimed_at) = handed.iter().map(|h| h.claimed_at).min() else {
            return;
        };
        let mut claimed = Vec::new();
        for h in &handed {
            for row in &h.rows {
                let Some(target) = targets.get(&row.endpoint_id) else {
                    outcomes.push((row.id, h.token, Settlement::Released));
                    continue;
                };
                // The group commit writes only task.succeeded, and its claim counted
                // the first attempt.
                claimed.push(Claimed {
                    id: row.id,
                    endpoint_id: row.endpoint_id,
                    task_id: row.task_id,
                    event: "task.succeeded".into(),
                    created_at: row.created_at,
                    attempts: 1,
                    claim_token: h.token,
                    target: target.clone(),
                });
            }
        }
        let round = Round {
            claimed,
            tasks,
            claimed_at,
            handed: true,
        };
        self.start(round, flight, per_endpoint, shutdown);
    }

    /// The endpoints whose window this replica has filled: a batch complete claims none
    /// of their rows.
    pub(super) fn busy(
        &self,
        per_endpoint: &HashMap<Uuid, (usize, Arc<Semaphore>)>,
        paces: &HashMap<Uuid, Duration>,
    ) -> Vec<Uuid> {
        let mut busy: Vec<Uuid> = per_endpoint
            .iter()
            .filter(|(id, (held, _))| self.window.full(*held, paces.get(id).copied()))
            .map(|(id, _)| *id)
            .collect();
        busy.sort_unstable();
        busy
    }
}

/// The rows of `handed`, released unsent.
pub(super) fn released(handed: &Handed) -> impl Iterator<Item = Outcome> + '_ {
    handed
        .rows
        .iter()
        .map(|row| (row.id, handed.token, Settlement::Released))
}

/// The next rows handed to this replica; never, without a hand-off.
pub(super) async fn handed_next(inbox: &mut Option<Inbox>) -> Option<Handed> {
    match inbox {
        Some(inbox) => inbox.recv().await,
        None => std::future::pending().await,
    }
}
