//! Submit: validated against the task types, committed as one statement,
//! then workers woken; or inside the caller's transaction, where it commits with it.

use tokio_postgres::GenericClient;

use super::{Owner, ServiceError, Tasklane};
use crate::admission::Refusal;
use crate::store::submit::{self, Submission};
use crate::store::submit_batch;
use crate::task::record::{SubmitOutcome, Submitted};
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

    /// Submits as one statement (its own transaction: committed when it returns), or in
    /// a group with concurrent submits when this service coalesces them, then wakes
    /// workers (here directly, other replicas by NOTIFY). A refusal is counted for the
    /// overview.
    pub async fn submit(
        &self,
        owner: &Owner,
        request: &SubmitRequest,
    ) -> Result<Submitted, ServiceError> {
        self.submit_with(owner, request, None, || {}).await
    }

    /// [`Tasklane::submit`] within the caller's trace, calling `committed` between the
    /// commit and the wake-up. The task keeps the context of the current span (when
    /// spans are exported), else `traceparent` as given (a W3C header; an invalid one is
    /// ignored), and its attempts continue that trace. `committed` is the load
    /// generator's clock for pickup latency, which must start once the task is visible
    /// and before any worker can have heard of it.
    pub async fn submit_with(
        &self,
        owner: &Owner,
        request: &SubmitRequest,
        traceparent: Option<&str>,
        committed: impl FnOnce(),
    ) -> Result<Submitted, ServiceError> {
        let answer = self
            .submit_once(owner, request, traceparent, committed)
            .await;
        self.record(request, &answer);
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
        let id = crate::task::new_task_id();
        let submission = self
            .again_on_fresh_connection("submit", || async {
                Ok(match &self.coalescer {
                    Some(coalescer) => coalescer.submit(id, task.clone()).await?,
                    None => submit::submit_pooled(&self.connection().await?, id, &task).await?,
                })
            })
            .await?;
        let submitted = match answer(submission) {
            Ok(submitted) => submitted,
            Err(refusal) => {
                // Best effort, as the count itself.
                match self.connection().await {
                    Ok(client) => count_refusal(&client, &refusal, &owner.app).await,
                    Err(error) => tracing::warn!(%error, "count a refusal"),
                }
                return Err(refusal.into());
            }
        };
        committed();
        if submitted.outcome == SubmitOutcome::Created {
            self.wakeup.wake_submitted([request.task_type.as_str()]);
        }
        Ok(submitted)
    }
}

pub use crate::task::bounds::MAX_BATCH;

/// How many times, in all, a batch statement is tried when it deadlocks (or fails to
/// serialize) against another batch.
const BATCH_TRIES: usize = 3;

impl Tasklane {
    /// Submits every request of `requests` (1..=[`MAX_BATCH`]) in one statement, each
    /// answered exactly as [`Tasklane::submit`] would answer it alone, in order: items
    /// are independent (one refused or invalid item does not affect another). Workers
    /// are woken once.
    pub async fn submit_batch(
        &self,
        owner: &Owner,
        requests: &[SubmitRequest],
        traceparent: Option<&str>,
    ) -> Result<Vec<Result<Submitted, ServiceError>>, ServiceError> {
        if requests.is_empty() || requests.len() > MAX_BATCH {
            let message = format!("must hold 1 to {MAX_BATCH} tasks");
            return Err(crate::task::bounds::Invalid::new("tasks", message).into());
        }
        let traceparent = spans::traceparent_of(&tracing::Span::current()).or_else(|| {
            traceparent
                .and_then(spans::valid_traceparent)
                .map(str::to_owned)
        });
        let mut answers: Vec<Option<Result<Submitted, ServiceError>>> = Vec::new();
        let mut prepared = Vec::new();
        for (n, request) in requests.iter().enumerate() {
            let task = self.prepare(owner, request).map(|mut task| {
                task.traceparent = traceparent.clone();
                task
            });
            match task {
                Ok(task) => {
                    prepared.push((n, crate::task::new_task_id(), task));
                    answers.push(None);
                }
                Err(error) => answers.push(Some(Err(error))),
            }
        }
        if !prepared.is_empty() {
            let items: Vec<_> = prepared.iter().map(|(_, id, task)| (*id, task)).collect();
            let decided = self.submit_many(&owner.app, &items).await?;
            for ((n, _, _), answer) in prepared.iter().zip(decided) {
                answers[*n] = Some(answer);
            }
        }
        let answers: Vec<_> = answers
            .into_iter()
            .map(|a| a.expect("every item is answered"))
            .collect();
        for (request, answer) in requests.iter().zip(&answers) {
            self.record(request, answer);
        }
        let created: Vec<&str> = requests
            .iter()
            .zip(&answers)
            .filter(|(_, a)| {
                a.as_ref()
                    .is_ok_and(|s| s.outcome == SubmitOutcome::Created)
            })
            .map(|(r, _)| r.task_type.as_str())
            .collect();
        if !created.is_empty() {
            self.wakeup.wake_submitted(created);
        }
        Ok(answers)
    }

    /// Runs the batch statement (at most [`BATCH_TRIES`] tries in all, when it deadlocked
    /// with another batch: nothing of it was written) and answers each item; refusals
    /// are counted, per code, in one write each.
    async fn submit_many(
        &self,
        app: &str,
        items: &[(crate::task::TaskId, &NewTask)],
    ) -> Result<Vec<Result<Submitted, ServiceError>>, ServiceError> {
        let (client, decided) = self
            .again_on_fresh_connection("submit batch", || async {
                let client = self.connection().await?;
                let mut tries = 0;
                let decided = loop {
                    tries += 1;
                    match submit_batch::submit_many(&client, items).await {
                        Err(error) if tries < BATCH_TRIES && submit_batch::is_retryable(&error) => {
                            tracing::debug!(%error, tries, "batch submit ran into another; again");
                        }
                        other => break other?,
                    }
                };
                Ok((client, decided))
            })
            .await?;
        let mut refused: std::collections::BTreeMap<&'static str, i64> = Default::default();
        let answers = decided
            .into_iter()
            .map(|submission| match submission {
                Ok(submission) => answer(submission).map_err(|refusal| {
                    *refused.entry(refusal.code.as_str()).or_default() += 1;
                    ServiceError::Refused(refusal)
                }),
                Err(error) => Err(error.into()),
            })
            .collect();
        for (code, count) in refused {
            count_refusals(&client, code, app, count).await;
        }
        Ok(answers)
    }

    /// Counts one submit's answer by type and outcome or code (registered types only:
    /// a submit's own type name is not bounded until it is known).
    fn record(&self, request: &SubmitRequest, answer: &Result<Submitted, ServiceError>) {
        if self.task_types.get(&request.task_type).is_none() {
            return;
        }
        match answer {
            Ok(submitted) => self
                .instruments
                .submitted(&request.task_type, outcome_name(submitted.outcome)),
            Err(error) if error.is_refusal() => {
                self.instruments.refused(&request.task_type, error.code())
            }
            Err(_) => {}
        }
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
    count_refusals(client, refusal.code.as_str(), app, 1).await
}

/// `count` refusals of `code` for `app`, best effort as [`count_refusal`].
async fn count_refusals(client: &tokio_postgres::Client, code: &str, app: &str, count: i64) {
    if let Err(error) = crate::store::admission::record_refusal(client, code, app, count).await {
        tracing::warn!(%error, "count refusals");
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
    Ok(answer(submission)?)
}

/// The database's decision as the caller's answer: the task, or the refusal that
/// admission reported.
fn answer(submission: Submission) -> Result<Submitted, Refusal> {
    match submission {
        Submission::Accepted(submitted) => Ok(*submitted),
        Submission::Refused(report) => Err(crate::admission::refusal(&report)),
    }
}
