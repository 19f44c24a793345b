//! Submit (DESIGN §3): validated against the task types, committed as one statement,
//! then workers woken; or inside the caller's transaction, where it commits with it.

use tokio_postgres::GenericClient;

use super::{Owner, ServiceError, Tasklane};
use crate::admission::Refusal;
use crate::store::submit::{self, Submission, SubmitOutcome, Submitted};
use crate::task::{NewTask, SubmitRequest};
use crate::telemetry::spans;

impl Tasklane {
    /// Validates `request` for `owner` against the task types and resolves its
    /// defaults. A scope owner submits to its own scope only.
    pub fn prepare(&self, owner: &Owner, request: &SubmitRequest) -> Result<NewTask, ServiceError> {
        super::lifecycle::own_scope(owner, &request.scope_id)?;
        let task_type = self
            .task_types
            .get(&request.task_type)
            .ok_or_else(|| ServiceError::UnknownTaskType(request.task_type.clone()))?;
        Ok(request.resolve(&owner.app, task_type, self.max_input_bytes)?)
    }

    /// Submits as one statement (its own transaction: committed when it returns), then
    /// wakes workers (here directly, other replicas by NOTIFY). A refusal is counted for
    /// the overview.
    pub async fn submit(
        &self,
        owner: &Owner,
        request: &SubmitRequest,
    ) -> Result<Submitted, ServiceError> {
        self.submit_observed(owner, request, None, || {}).await
    }

    /// [`Tasklane::submit`] within the caller's trace: the task keeps the context of
    /// the current span (when spans are exported), else `traceparent` as given (a W3C
    /// header; an invalid one is ignored), and its attempts continue that trace.
    pub async fn submit_traced(
        &self,
        owner: &Owner,
        request: &SubmitRequest,
        traceparent: Option<&str>,
    ) -> Result<Submitted, ServiceError> {
        self.submit_observed(owner, request, traceparent, || {})
            .await
    }

    /// [`Tasklane::submit_traced`], calling `committed` between the commit and the
    /// wake-up: the load generator's clock for pickup latency, which must start once the
    /// task is visible and before any worker can have heard of it.
    pub async fn submit_observed(
        &self,
        owner: &Owner,
        request: &SubmitRequest,
        traceparent: Option<&str>,
        committed: impl FnOnce(),
    ) -> Result<Submitted, ServiceError> {
        let answer = self
            .submit_once(owner, request, traceparent, committed)
            .await;
        // Only registered types become attributes: a submit's own type name is not
        // bounded until it is known.
        if self.task_types.get(&request.task_type).is_some() {
            match &answer {
                Ok(submitted) => self
                    .instruments
                    .submitted(&request.task_type, outcome_name(submitted.outcome)),
                Err(error) if error.is_refusal() => {
                    self.instruments.refused(&request.task_type, error.code())
                }
                Err(_) => {}
            }
        }
        answer
    }

    async fn submit_once(
        &self,
        owner: &Owner,
        request: &SubmitRequest,
        traceparent: Option<&str>,
        committed: impl FnOnce(),
    ) -> Result<Submitted, ServiceError> {
        let mut task = self.prepare(owner, request)?;
        task.traceparent = spans::traceparent_of(&tracing::Span::current()).or_else(|| {
            traceparent
                .and_then(spans::valid_traceparent)
                .map(str::to_owned)
        });
        let client = self.connection().await?;
        let submission = submit::submit_pooled(&client, crate::task::new_task_id(), &task).await?;
        let submitted = match accepted(submission) {
            Ok(submitted) => submitted,
            Err(refusal) => {
                count_refusal(&client, &refusal, &owner.app).await;
                return Err(refusal.into());
            }
        };
        committed();
        if submitted.outcome == SubmitOutcome::Created {
            self.wakeup.wake_all();
        }
        Ok(submitted)
    }
}

fn outcome_name(outcome: SubmitOutcome) -> &'static str {
    match outcome {
        SubmitOutcome::Created => "created",
        SubmitOutcome::Joined => "joined",
        SubmitOutcome::Existing => "existing",
    }
}

/// Best effort: a refusal count that fails to write is logged, never turned into an error.
async fn count_refusal(client: &tokio_postgres::Client, refusal: &Refusal, app: &str) {
    if let Err(error) =
        crate::store::admission::record_refusal(client, refusal.code.as_str(), app).await
    {
        tracing::warn!(%error, "count a refusal");
    }
}

/// Submits a prepared task through admission inside the caller's transaction (its owner
/// lock lasts until that ends, and it commits or rolls back with it), or on a plain
/// client (then it is its own transaction). Workers find it at their next poll or
/// wake-up. A refusal writes nothing.
pub async fn submit_in<C: GenericClient + Sync>(
    client: &C,
    task: &NewTask,
) -> Result<Submitted, ServiceError> {
    let submission = submit::submit(client, crate::task::new_task_id(), task).await?;
    Ok(accepted(submission)?)
}

/// The database's decision as the caller's answer: the task, or the refusal that
/// admission reported.
pub fn accepted(submission: Submission) -> Result<Submitted, Refusal> {
    match submission {
        Submission::Accepted(submitted) => Ok(*submitted),
        Submission::Refused(report) => Err(crate::admission::refusal(&report)),
    }
}
