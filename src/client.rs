//! The Rust API for applications and for the HTTP layer: submit (validated against the
//! registry, committed, then workers woken), read, cancel.

use std::sync::Arc;

use tokio_postgres::GenericClient;

use crate::admission::Refusal;
use crate::store::submit::{self, SubmitError, Submitted};
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

    /// Submits in its own transaction, commits, then wakes workers (here directly, other
    /// replicas by NOTIFY). A refusal is rolled back, then counted for the overview.
    pub async fn submit(
        &self,
        app: &str,
        request: &SubmitRequest,
    ) -> Result<Submitted, SubmitRefused> {
        let task = self.prepare(app, request)?;
        let mut object = self
            .pool
            .get()
            .await
            .map_err(|e| SubmitRefused::Pool(e.to_string()))?;
        let client: &mut tokio_postgres::Client = &mut object;
        let tx = client.transaction().await?;
        let submitted = match submit_in(&tx, &task).await {
            Ok(submitted) => submitted,
            Err(SubmitRefused::Refused(refusal)) => {
                tx.rollback().await?;
                count_refusal(client, &refusal, app).await;
                return Err(refusal.into());
            }
            Err(error) => return Err(error),
        };
        tx.commit().await?;
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

/// Submits a prepared task inside the caller's transaction (which must be one: the owner
/// lock lasts until it ends), through admission. Workers find it at their next poll or
/// wake-up. A refusal leaves nothing behind in the transaction.
pub async fn submit_in<C: GenericClient + Sync>(
    tx: &C,
    task: &NewTask,
) -> Result<Submitted, SubmitRefused> {
    submit::submit(tx, task, |id| async move {
        // Under the owner lock: a fenced scope refuses first (410), then the limits.
        crate::store::lifecycle::check_fence(tx, &task.app, &task.scope_id).await?;
        crate::admission::admit(tx, id, task)
            .await?
            .map_err(SubmitRefused::from)
    })
    .await
}
