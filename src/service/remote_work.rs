//! The worker protocol's batches and live output, for remote workers: a heartbeat or a
//! completion of many attempts in one request, each item fenced on its own lease and
//! answered on its own (a lost lease or a deleted task answers that item, never the
//! batch), and text appended to a running attempt's live output. Every call names the
//! owner the worker's token speaks for; another owner's task is answered as gone.

use uuid::Uuid;

use super::{Beat, BeatAnswer, BeatItem, Completion, OutputItem, Owner, ServiceError, Tasklane};
use crate::store::{self, remote_lease};
use crate::task::remote;

impl Tasklane {
    /// Extends the leases of `items` in one statement, recording their progress and
    /// snapshots, and appends their output to the attempts' live output; answers each
    /// item in the order given.
    pub async fn heartbeat_batch(
        &self,
        owner: &Owner,
        items: &[BeatItem],
    ) -> Result<Vec<Result<BeatAnswer, ServiceError>>, ServiceError> {
        remote::check_batch(items.iter().map(|i| i.id))?;
        for (n, item) in items.iter().enumerate() {
            if let Some(text) = &item.output {
                remote::check_output(&format!("items[{n}].output"), text)?;
            }
        }
        let answers = self
            .again_on_fresh_connection("heartbeat batch", || async {
                let client = self.connection().await?;
                Ok(remote_lease::heartbeat_batch(store::client(&client), owner, items).await?)
            })
            .await?;
        for (item, answer) in items.iter().zip(&answers) {
            if let (Some(text), Ok(beat)) = (&item.output, answer) {
                self.push_output(item.id, beat.attempt, item.lease_token, text);
            }
        }
        Ok(answers
            .into_iter()
            .map(|a| a.map_err(ServiceError::from))
            .collect())
    }

    /// Completes `batch` (of `owner`'s tasks) as succeeded, answering each item in the
    /// order given: [`ServiceError::TaskGone`], [`ServiceError::LeaseLost`] (also past
    /// the attempt's deadline) and [`ServiceError::InvalidOutput`] (nothing written for
    /// that item) as the single completion would. One read checks owner, type and
    /// deadline of the whole batch, one statement writes it (the in-process worker's
    /// group commit). The attempts' live output streamed through this replica is
    /// published before the write.
    pub async fn complete_batch(
        &self,
        owner: &Owner,
        batch: &[Completion],
    ) -> Result<Vec<Result<(), ServiceError>>, ServiceError> {
        remote::check_batch(batch.iter().map(|c| c.id))?;
        let ids: Vec<Uuid> = batch.iter().map(|c| c.id).collect();
        let checks = self
            .again_on_fresh_connection("check completions", || async {
                let client = self.connection().await?;
                Ok(remote_lease::completion_checks(store::client(&client), owner, &ids).await?)
            })
            .await?;
        // The deadline is read a moment before the write: an attempt whose deadline
        // passes in between succeeds as if its request had come that moment sooner; the
        // deadline sweep's settlement is fenced on the same token, so only one wins.
        let mut answers: Vec<Option<Result<(), ServiceError>>> = batch
            .iter()
            .map(|c| match checks.get(&c.id) {
                None => Some(Err(ServiceError::TaskGone)),
                Some(check) if check.overdue => Some(Err(ServiceError::LeaseLost)),
                Some(check) => self
                    .check_output(&check.task_type, &c.success.result)
                    .err()
                    .map(Err),
            })
            .collect();
        let mut writes: Vec<usize> = (0..batch.len()).filter(|&n| answers[n].is_none()).collect();
        writes.sort_by_key(|&n| batch[n].id);
        let leases: Vec<(Uuid, Uuid)> = writes
            .iter()
            .map(|&n| (batch[n].id, batch[n].lease_token))
            .collect();
        self.finish_output(&leases).await;
        if !writes.is_empty() {
            let sorted: Vec<Completion> = writes.iter().map(|&n| batch[n].clone()).collect();
            let written = self.complete_many(&sorted).await?;
            for (n, answer) in writes.into_iter().zip(written) {
                answers[n] = Some(answer);
            }
        }
        Ok(answers
            .into_iter()
            .map(|a| a.expect("every item is answered"))
            .collect())
    }

    /// A remote worker's single heartbeat ([`Tasklane::heartbeat`]) that may carry
    /// text for the attempt's live output, appended once the lease is extended.
    pub async fn heartbeat_with_output(
        &self,
        owner: &Owner,
        id: Uuid,
        lease_token: Uuid,
        beat: &Beat,
        output: Option<&str>,
    ) -> Result<BeatAnswer, ServiceError> {
        if let Some(text) = output {
            remote::check_output("output", text)?;
        }
        let answer = self.heartbeat(Some(owner), id, lease_token, beat).await?;
        if let Some(text) = output {
            self.push_output(id, answer.attempt, lease_token, text);
        }
        Ok(answer)
    }

    /// Appends `text` to the live output of task `id`'s running attempt, when
    /// `lease_token` holds its lease (checked with a read: nothing is written per
    /// chunk). Another owner's task is [`ServiceError::NotFound`].
    pub async fn write_output(
        &self,
        owner: &Owner,
        id: Uuid,
        lease_token: Uuid,
        text: &str,
    ) -> Result<(), ServiceError> {
        remote::check_output("text", text)?;
        let holder = self
            .again_on_fresh_connection("check output lease", || async {
                let client = self.connection().await?;
                Ok(remote_lease::holder(store::client(&client), id, lease_token).await?)
            })
            .await?;
        let Some(holder) = holder else {
            return Err(ServiceError::TaskGone);
        };
        let visible = holder.app == owner.app
            && owner
                .scope_id
                .as_ref()
                .is_none_or(|scope| *scope == holder.scope_id);
        if !visible {
            return Err(ServiceError::NotFound);
        }
        if !holder.held {
            return Err(ServiceError::LeaseLost);
        }
        self.push_output(id, holder.attempt, lease_token, text);
        Ok(())
    }

    /// Appends each item's text to the live output of its task's running attempt, when
    /// its lease token holds the lease: one read checks the whole batch (nothing is
    /// written per chunk). Answers each item in the order given: another owner's task is
    /// [`ServiceError::TaskGone`], as the batched heartbeat answers it.
    pub async fn write_outputs(
        &self,
        owner: &Owner,
        items: &[OutputItem],
    ) -> Result<Vec<Result<(), ServiceError>>, ServiceError> {
        remote::check_outputs(items)?;
        let leases: Vec<(Uuid, Uuid)> = items.iter().map(|i| (i.id, i.lease_token)).collect();
        let holdings = self
            .again_on_fresh_connection("check output leases", || async {
                let client = self.connection().await?;
                Ok(remote_lease::holdings(store::client(&client), owner, &leases).await?)
            })
            .await?;
        Ok(items
            .iter()
            .map(|item| match holdings.get(&item.id) {
                None => Err(ServiceError::TaskGone),
                Some(holding) if !holding.held => Err(ServiceError::LeaseLost),
                Some(holding) => {
                    self.push_output(item.id, holding.attempt, item.lease_token, &item.text);
                    Ok(())
                }
            })
            .collect())
    }

    /// Hands text whose lease was just seen to hold to this replica's publisher (a
    /// replica without one publishes no live output).
    pub(super) fn push_output(&self, id: Uuid, attempt: i32, lease_token: Uuid, text: &str) {
        if text.is_empty() {
            return;
        }
        match &self.remote_output {
            Some(streams) => streams.push(id, attempt, lease_token, text),
            None => tracing::debug!(task = %id, "no live output publisher: remote output dropped"),
        }
    }

    /// Publishes what remote workers streamed through this replica for these leases,
    /// before their settlement is written.
    pub(super) async fn finish_output(&self, leases: &[(Uuid, Uuid)]) {
        if let Some(streams) = &self.remote_output {
            if !streams.is_empty() {
                streams.finish(leases).await;
            }
        }
    }
}
