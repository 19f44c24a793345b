//! The worker protocol, for remote workers (over HTTP) and the in-process worker alike:
//! claim, heartbeat, complete, settle by a report, hand back. Every write after a claim
//! is fenced on the lease token (`store::lease`); a remote worker's calls also name the
//! owner its token speaks for, and another owner's task is [`ServiceError::NotFound`].
//! After a settlement that leaves the task waiting, workers are woken: a fallback is
//! claimable by an external worker at once.

use uuid::Uuid;

use super::{
    Beat, BeatAnswer, Claimant, ClaimedTask, Completion, Lease, LeaseStatus, Owner, Reported,
    ServiceError, Slots, Success, Tasklane,
};
use crate::store::lease::{self, LeaseError};
use crate::store::query::TaskOwner;
use crate::store::recover::{self, Lost};
use crate::store::{self, attempts, claim, complete_many, query};
use crate::task::settlement::Report;
use crate::task::{bounds, output, TaskState};
use crate::telemetry::spans;
use tracing::Instrument as _;

/// Most task types one claim may name.
pub const MAX_CLAIM_TYPES: usize = 100;

/// What one sweep of attempts past their deadline found, and the database's clock
/// before it looked.
#[derive(Debug, Clone, Copy)]
pub struct Swept {
    pub found: usize,
    pub clock: chrono::DateTime<chrono::Utc>,
}

impl Tasklane {
    /// Claims up to `limit` tasks of `task_types` for `claimant`, of `owner` only when
    /// given (a remote worker's token), of any owner for the in-process worker. Types
    /// must be registered. The statement is prepared once per pooled connection and is
    /// the cheaper one when none of the types claims through a resource slot pool.
    pub async fn claim(
        &self,
        claimant: &Claimant<'_>,
        owner: Option<&Owner>,
        task_types: &[String],
        limit: i64,
    ) -> Result<Vec<ClaimedTask>, ServiceError> {
        bounds::key("worker_id", claimant.worker_id)?;
        // A remote worker (it claims with its token's owner) takes at most the worker
        // protocol's batch; the replica's own workers may take larger ones.
        let batch = match owner {
            Some(_) => &bounds::CLAIM_BATCH,
            None => &bounds::IN_PROCESS_CLAIM_BATCH,
        };
        bounds::within("max", limit, batch)?;
        if task_types.is_empty() || task_types.len() > MAX_CLAIM_TYPES {
            return Err(bounds::Invalid::new("task_types", "must name 1 to 100 task types").into());
        }
        if let Some(unknown) = task_types.iter().find(|t| self.task_types.get(t).is_none()) {
            return Err(ServiceError::UnknownTaskType(unknown.clone()));
        }
        let slots = if self.task_types.any_needs_slots(task_types) {
            Slots::Aware
        } else {
            Slots::Plain
        };
        let client = self.claim_connection().await?;
        let mut claimed =
            claim::claim_pooled(&client, claimant, slots, owner, task_types, limit).await?;
        self.instruments.claim(claimed.len());
        for task in &mut claimed {
            self.claimed(claimant, task);
        }
        Ok(claimed)
    }

    /// Claims, for an external in-process claimant, up to `limit` tasks of
    /// `task_types` that wait for an external fallback (and no queued ones): the
    /// external side of types whose routes go local first.
    pub async fn claim_fallbacks(
        &self,
        claimant: &Claimant<'_>,
        task_types: &[String],
        limit: i64,
    ) -> Result<Vec<ClaimedTask>, ServiceError> {
        bounds::within("max", limit, &bounds::IN_PROCESS_CLAIM_BATCH)?;
        let slots = if self.task_types.any_needs_slots(task_types) {
            Slots::Aware
        } else {
            Slots::Plain
        };
        let client = self.claim_connection().await?;
        let mut claimed =
            claim::claim_fallbacks_pooled(&client, claimant, slots, task_types, limit).await?;
        self.instruments.claim(claimed.len());
        for task in &mut claimed {
            self.claimed(claimant, task);
        }
        Ok(claimed)
    }

    /// Records one claim: the task's wait since it became claimable, and a
    /// `tasklane.claim` span in the task's trace, which the attempt (here or on a remote
    /// worker, whose claim answer carries it) continues.
    fn claimed(&self, claimant: &Claimant<'_>, task: &mut ClaimedTask) {
        let claimed_at = task.attempt_deadline_at
            - chrono::Duration::seconds(i64::from(task.attempt_timeout_seconds));
        let waited = (claimed_at - task.claimable_at)
            .num_microseconds()
            .unwrap_or(0);
        self.instruments
            .queue_wait(&task.task_type, waited.max(0) as f64 / 1e6);
        let span = tracing::info_span!(
            "tasklane.claim",
            task_type = %task.task_type,
            attempt = task.attempt,
            route = claimant.locality.as_str(),
            worker_id = claimant.worker_id,
        );
        spans::continue_trace(&span, task.traceparent.as_deref());
        if let Some(traceparent) = spans::traceparent_of(&span) {
            task.traceparent = Some(traceparent);
        }
    }

    /// Extends the lease and records progress, phase, snapshot and events; answers
    /// whether cancellation was requested.
    pub async fn heartbeat(
        &self,
        owner: Option<&Owner>,
        id: Uuid,
        lease_token: Uuid,
        beat: &Beat,
    ) -> Result<BeatAnswer, ServiceError> {
        self.again_on_fresh_connection("heartbeat", || async {
            let client = self.connection().await?;
            let client = store::client(&client);
            check_owner(client, owner, id).await?;
            Ok(lease::heartbeat(client, id, lease_token, beat).await?)
        })
        .await
    }

    /// Extends the leases of many in-process attempts in one statement (a claim loop's
    /// heartbeat tick), answering each lease's status in the order given. Progress and
    /// events go through [`Tasklane::heartbeat`]; this only keeps leases alive.
    pub async fn extend_leases(&self, leases: &[Lease]) -> Result<Vec<LeaseStatus>, ServiceError> {
        if leases.is_empty() {
            return Ok(Vec::new());
        }
        self.again_on_fresh_connection("extend leases", || async {
            let client = self.connection().await?;
            Ok(lease::extend_many(store::client(&client), leases).await?)
        })
        .await
    }

    /// Settles the attempt as succeeded (also when cancellation was requested
    /// meanwhile: the work is done). A remote worker's result of a type with an output
    /// schema must carry the matching value as `output`, else nothing is written
    /// ([`ServiceError::InvalidOutput`]); the in-process executors check their own.
    #[tracing::instrument(name = "tasklane.settle", skip_all, fields(task = %id))]
    pub async fn complete(
        &self,
        owner: Option<&Owner>,
        id: Uuid,
        lease_token: Uuid,
        success: &Success,
    ) -> Result<(), ServiceError> {
        if owner.is_some() {
            self.finish_output(&[(id, lease_token)]).await;
        }
        self.again_on_fresh_connection("complete", || async {
            let client = self.connection().await?;
            let client = store::client(&client);
            if let Some(task) = check_owner(client, owner, id).await? {
                self.check_output(&task.task_type, &success.result)?;
            }
            Ok(lease::complete(client, id, lease_token, success).await?)
        })
        .await
    }

    /// Whether `result` is what `task_type`'s output schema asks for (a type without
    /// one, or unknown to this replica, takes any result).
    pub(super) fn check_output(
        &self,
        task_type: &str,
        result: &serde_json::Value,
    ) -> Result<(), ServiceError> {
        let Some(schema) = self
            .task_types
            .get(task_type)
            .and_then(|t| t.output_schema.as_ref())
        else {
            return Ok(());
        };
        output::check_result(schema, result)
            .map_err(|invalid| ServiceError::InvalidOutput(invalid.0))
    }

    /// Completes a batch in one statement, each answered as [`Tasklane::complete`]
    /// would have; an `Err` means nothing of the batch was written. The in-process
    /// worker's group commit. With a hand-off (this replica delivers webhooks), the
    /// notifications it writes are claimed in the same statement and handed to the
    /// deliverer while it has room.
    pub async fn complete_many(
        &self,
        batch: &[Completion],
    ) -> Result<Vec<Result<(), ServiceError>>, ServiceError> {
        let settled = self
            .again_on_fresh_connection("complete batch", || async {
                let client = self.connection().await?;
                let offer = self.handoff.as_ref().and_then(|h| h.offer());
                let claim = offer.as_ref().map(|o| complete_many::NotificationClaim {
                    token: o.token,
                    claim_for: o.claim_for,
                    busy: &o.busy,
                });
                let settled = complete_many::complete_many(&client, batch, claim).await?;
                if let (Some(handoff), Some(offer)) = (&self.handoff, offer) {
                    handoff.hand(offer, settled.claimed);
                }
                Ok(settled.answers)
            })
            .await?;
        Ok(settled
            .into_iter()
            .map(|a| a.map_err(ServiceError::from))
            .collect())
    }

    /// A remote worker's settlement by its report (with the usage and provenance it
    /// reported): the task must be `owner`'s. Its span continues the task's trace.
    #[tracing::instrument(name = "tasklane.settle", skip_all, fields(task = %id))]
    pub async fn settle(
        &self,
        owner: &Owner,
        id: Uuid,
        lease_token: Uuid,
        reported: Reported,
    ) -> Result<TaskState, ServiceError> {
        let client = self.connection().await?;
        let task = check_owner(store::client(&client), Some(owner), id).await?;
        drop(client);
        let task_type = task.map(|t| t.task_type).unwrap_or_default();
        self.finish_output(&[(id, lease_token)]).await;
        self.settle_as(&task_type, id, lease_token, reported).await
    }

    /// The in-process worker's settlement of `task` (claimed by this process, so its
    /// type is known and no owner needs checking).
    pub async fn settle_claimed(
        &self,
        task: &ClaimedTask,
        reported: Reported,
    ) -> Result<TaskState, ServiceError> {
        let span = tracing::info_span!("tasklane.settle", task = %task.id);
        self.settle_as(&task.task_type, task.id, task.lease_token, reported)
            .instrument(span)
            .await
    }

    /// Settles by `reported` with `task_type`'s backoff (`task::settlement::settle` decides);
    /// wakes workers when the task is left waiting. Returns the new state.
    async fn settle_as(
        &self,
        task_type: &str,
        id: Uuid,
        lease_token: Uuid,
        reported: Reported,
    ) -> Result<TaskState, ServiceError> {
        let backoff = self.task_types.backoff(task_type);
        let rules = crate::task::settlement::Rules {
            backoff: &backoff,
            circuit_wait: self.task_types.circuit_wait(task_type),
        };
        let settled = self
            .again_on_fresh_connection("settle", || async {
                let mut object = self.connection().await?;
                let client: &mut tokio_postgres::Client = &mut object;
                Ok(lease::settle_with(client, id, lease_token, reported.clone(), rules).await?)
            })
            .await?;
        let state = settled.state;
        if state == TaskState::WaitingForExternalFallback {
            self.wakeup.wake_fallback();
        }
        match settled.claimable_in {
            // A retry is claimable once its backoff ends: wake the loops then.
            Some(delay) if !delay.is_zero() => self.wakeup.wake_after(delay),
            _ if !state.is_terminal() => self.wakeup.wake_all(),
            _ => {}
        }
        Ok(state)
    }

    /// Ends up to `limit` attempts past their server-side deadline as timed out
    /// (`attempt_timeout`: retried or failed by the outcome rules, with the type's
    /// backoff); attempts of replica processes only `grace` after it. Returns how many
    /// it found, and the database's clock before it looked; an attempt its worker settled
    /// meanwhile is left as the worker wrote it. With `from` (the clock of a sweep that
    /// found nothing more) it reads only the leases that ended since, less the grace.
    pub async fn time_out_overdue(
        &self,
        limit: i64,
        grace: std::time::Duration,
        from: Option<chrono::DateTime<chrono::Utc>>,
    ) -> Result<Swept, ServiceError> {
        let (overdue, clock) = {
            let client = self.connection().await?;
            let client = store::client(&client);
            let clock = store::clock::now(client).await?;
            let overdue = attempts::overdue(client, limit, grace.as_secs_f64(), from).await?;
            (overdue, clock)
        };
        for attempt in &overdue {
            let reported = Reported {
                report: Report::TimedOut,
                facts: Default::default(),
                usage_units: None,
            };
            match self
                .settle_as(
                    &attempt.task_type,
                    attempt.id,
                    attempt.lease_token,
                    reported,
                )
                .await
            {
                Ok(_) | Err(ServiceError::LeaseLost | ServiceError::TaskGone) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(Swept {
            found: overdue.len(),
            clock,
        })
    }

    /// Gives a lease back now, through the restart policy, instead of letting it
    /// expire (a replica shutting down past its grace period); other replicas hear of
    /// it at commit instead of at their next poll.
    pub async fn hand_back(&self, id: Uuid, lease_token: Uuid) -> Result<(), ServiceError> {
        let recovered = self
            .again_on_fresh_connection("hand back", || async {
                let mut object = self.connection().await?;
                let client: &mut tokio_postgres::Client = &mut object;
                let tx = client.transaction().await?;
                let lost = Lost::HandedBack {
                    ids: &[id],
                    lease_tokens: &[lease_token],
                };
                let recovered = recover::recover(&tx, &lost, 1).await?;
                store::notify::wake_replicas(&tx).await?;
                tx.commit().await?;
                Ok(recovered)
            })
            .await?;
        self.instruments.recovered("handed_back", recovered as u64);
        Ok(())
    }
}

/// For a remote worker: the task must exist (else it was deleted: `task_gone`) and be
/// its owner's (else `not_found`). The current span (the settlement's) then continues
/// the task's trace. Returns the task's owner row when it looked.
async fn check_owner(
    client: &tokio_postgres::Client,
    owner: Option<&Owner>,
    id: Uuid,
) -> Result<Option<TaskOwner>, ServiceError> {
    let Some(owner) = owner else {
        return Ok(None);
    };
    match query::owner_of(client, id).await? {
        None => Err(LeaseError::Gone.into()),
        Some(task) if !task.visible_to(owner) => Err(ServiceError::NotFound),
        Some(task) => {
            spans::continue_trace(&tracing::Span::current(), task.traceparent.as_deref());
            Ok(Some(task))
        }
    }
}
