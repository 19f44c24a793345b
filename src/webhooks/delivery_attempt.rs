//! One webhook attempt: sign and send a claimed notification, decide its settlement
//! (delivered, retried later, failed; a 410 disables the endpoint). The deliverer's
//! rounds (`deliverer/`) claim, read the tasks, run these and record the outcomes.

use anyhow::Context;
use uuid::Uuid;

use super::schedule::{verdict, RetrySchedule, Verdict};
use super::sender::{Answer, Message, Sender};
use super::{payload, signature};
use crate::store;
use crate::store::outbox::{self, Claimed, Settlement};
use crate::task::record::TaskRecord;
use crate::telemetry::Instruments;

/// What every attempt of this replica shares.
pub(super) struct Shared {
    pub(super) pool: crate::store::Pool,
    pub(super) sender: Sender,
    pub(super) schedule: RetrySchedule,
    pub(super) instruments: Instruments,
}

/// `(id, claim_token, settlement)` of an attempt, recorded with its round.
pub(super) type Outcome = (Uuid, Uuid, Settlement);

impl Shared {
    /// Sends one claimed row; what came of it, for the round's record (a 410 is
    /// recorded here, with the endpoint's disabling).
    pub(super) async fn attempt(&self, row: Claimed, task: Option<TaskRecord>) -> Option<Outcome> {
        let settlement = match (row.target.disabled, task) {
            (true, _) => Settlement::Failed {
                status: None,
                error: Some("the endpoint is disabled".into()),
            },
            (false, None) => Settlement::Failed {
                status: None,
                error: Some("the task no longer exists".into()),
            },
            (false, Some(task)) => self.send(&row, task).await,
        };
        let gone = matches!(
            settlement,
            Settlement::Failed {
                status: Some(410),
                ..
            }
        );
        let outcome = match (&settlement, gone) {
            (Settlement::Delivered { .. }, _) => "delivered",
            (Settlement::Retry { .. }, _) => "retried",
            (Settlement::Failed { .. }, true) => "disabled",
            (Settlement::Failed { .. }, false) => "failed",
            (Settlement::Released, _) => "released",
        };
        self.instruments.webhook_delivery(outcome);
        if !gone {
            return Some((row.id, row.claim_token, settlement));
        }
        if let Err(error) = self.disable(&row, &settlement).await {
            // The claim runs out and the row is sent again: at least once.
            tracing::warn!(delivery = %row.id, error = %format!("{error:#}"), "record a 410");
        }
        None
    }

    async fn send(&self, row: &Claimed, task: TaskRecord) -> Settlement {
        let keys: Vec<Vec<u8>> = row
            .target
            .secrets
            .iter()
            .filter_map(|s| signature::key_of(s).ok())
            .collect();
        let body = payload::body(&row.event, row.created_at, task);
        let id = row.id.to_string();
        let timestamp = chrono::Utc::now().timestamp();
        let signature = signature::signature_header(&keys, &id, timestamp, &body);
        let answer = self
            .sender
            .send(Message {
                url: &row.target.url,
                id: &id,
                timestamp,
                signature: &signature,
                body,
            })
            .await;
        let (status, retry_after, error) = match answer {
            Answer::Status {
                status,
                retry_after,
            } => match verdict(status, retry_after.as_deref()) {
                Verdict::Delivered => return Settlement::Delivered { status },
                Verdict::Gone => {
                    return Settlement::Failed {
                        status: Some(410),
                        error: Some("the receiver answered 410: endpoint disabled".into()),
                    }
                }
                Verdict::Retry { retry_after } => {
                    let error = if (300..400).contains(&status) {
                        format!("HTTP {status} (redirects are not followed)")
                    } else {
                        format!("HTTP {status}")
                    };
                    (Some(status), retry_after, error)
                }
            },
            Answer::NoAnswer(error) => (None, None, error),
        };
        match self
            .schedule
            .next(row.attempts, retry_after, rand::random::<f64>())
        {
            Some(after) => Settlement::Retry {
                after,
                status,
                error: Some(error),
            },
            None => Settlement::Failed {
                status,
                error: Some(error),
            },
        }
    }

    /// Records a 410 and disables its endpoint (its other pending rows fail).
    async fn disable(&self, row: &Claimed, settlement: &Settlement) -> anyhow::Result<()> {
        let client = self.pool.get().await.context("connection")?;
        let mut outcome = [(row.id, row.claim_token, settlement.clone())];
        outbox::settle_many(&client, &mut outcome)
            .await
            .context("settle")?;
        outbox::disable_endpoint(store::client(&client), row.endpoint_id)
            .await
            .context("disable the endpoint")?;
        tracing::info!(endpoint = %row.endpoint_id, "webhook endpoint disabled after a 410");
        Ok(())
    }
}
