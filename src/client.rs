//! The Rust API for applications and for the HTTP layer: submit (validated against the
//! registry, committed, then workers woken), read, cancel.

use std::sync::Arc;

use tokio_postgres::GenericClient;

use crate::admission::Refusal;
use crate::store::submit::{self, Submission, SubmitError, Submitted};
use crate::store::DbError;
use crate::task::bounds::Invalid;
use crate::task::{NewTask, SubmitRequest};
use crate::worker::{Registry, Wakeup};

/// Why a submit was refused.
#[derive(Debug, thiserror::Error)]
pub enum SubmitRefused {
    #[error("unknown task type {0:?}")]
    UnknownTaskType(String),
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Submit(#[from] SubmitError),
    /// Admission refused it (429/503 with Retry-After); nothing was written.
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error("database pool: {0}")]
    Pool(String),
}

impl From<DbError> for SubmitRefused {
    fn from(error: DbError) -> Self {
        SubmitRefused::Submit(SubmitError::Db(error))
    }
}

/// A handle on tasklane for one process.
#[derive(Clone)]
pub struct Tasklane {
    pub pool: deadpool_postgres::Pool,
    pub registry: Arc<Registry>,
    pub wakeup: Wakeup,
    pub max_input_bytes: usize,
}

impl Tasklane {
    /// Validates `request` for `app` against the registry and resolves its defaults.
    pub fn prepare(&self, app: &str, request: &SubmitRequest) -> Result<NewTask, SubmitRefused> {
        let task_type = self
            .registry
            .get(&request.task_type)
            .ok_or_else(|| SubmitRefused::UnknownTaskType(request.task_type.clone()))?;
        Ok(request.resolve(app, task_type, self.max_input_bytes)?)
    }

    /// Submits as one statement (its own transaction: committed when it returns), then
    /// wakes workers (here directly, other replicas by NOTIFY). A refusal is counted for
    /// the overview.
    pub async fn submit(
        &self,
        app: &str,
        request: &SubmitRequest,
    ) -> Result<Submitted, SubmitRefused> {
        let task = self.prepare(app, request)?;
        let object = self
            .pool
            .get()
            .await
            .map_err(|e| SubmitRefused::Pool(e.to_string()))?;
        let submission = submit::submit_pooled(&object, crate::task::new_task_id(), &task).await?;
        let submitted = match accepted(submission) {
            Ok(submitted) => submitted,
            Err(refusal) => {
                count_refusal(crate::store::client(&object), &refusal, app).await;
                return Err(refusal.into());
            }
        };
        if submitted.outcome == submit::SubmitOutcome::Created {
            self.wakeup.wake_all();
        }
        Ok(submitted)
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

/// Submits a prepared task through admission, on a plain client (the submit is then
/// its own transaction) or inside the caller's transaction (its owner lock lasts until
/// that ends, and it commits or rolls back with it). Workers find it at their next poll
/// or wake-up. A refusal writes nothing.
pub async fn submit_in<C: GenericClient + Sync>(
    client: &C,
    task: &NewTask,
) -> Result<Submitted, SubmitRefused> {
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
