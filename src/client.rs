//! The Rust API for applications and for the HTTP layer: submit (validated against the
//! registry, committed, then workers woken), read, cancel.

use std::sync::Arc;

use tokio_postgres::GenericClient;

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
    /// replicas by NOTIFY).
    pub async fn submit(&self, app: &str, request: &SubmitRequest) -> Result<Submitted, SubmitRefused> {
        let task = self.prepare(app, request)?;
        let mut object = self.pool.get().await.map_err(|e| SubmitRefused::Pool(e.to_string()))?;
        let client: &mut tokio_postgres::Client = &mut object;
        let tx = client.transaction().await?;
        let submitted = submit_in(&tx, &task).await?;
        tx.commit().await?;
        if submitted.outcome == submit::SubmitOutcome::Created {
            self.wakeup.wake_all();
        }
        Ok(submitted)
    }
}

/// Submits a prepared task inside the caller's transaction (which must be one: the owner
/// lock lasts until it ends). Workers find it at their next poll or wake-up.
pub async fn submit_in<C: GenericClient + Sync>(tx: &C, task: &NewTask) -> Result<Submitted, SubmitError> {
    submit::submit(tx, task, || async {
        crate::store::lifecycle::check_fence(tx, &task.app, &task.scope_id).await?;
        Ok::<(), SubmitError>(())
    })
    .await
}
