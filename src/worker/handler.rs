//! The `Handler` trait in-process executors implement, the context an attempt runs with,
//! and the registry that maps task types to handlers.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::store::lease::{self, Beat, LeaseError, Success};
use crate::store::ClaimedTask;
use crate::task::{Executor, TaskType};

/// Runs one attempt of a task. Return `Ok` with the result, or a [`HandlerError`] that
/// says whether another attempt may help. Long handlers call [`TaskContext::report`]
/// now and then and watch [`TaskContext::cancelled`].
#[async_trait::async_trait]
pub trait Handler: Send + Sync + 'static {
    async fn run(&self, ctx: TaskContext) -> Result<Success, HandlerError>;
}

/// How an attempt failed.
#[derive(Debug, Clone, PartialEq)]
pub enum HandlerError {
    /// Another attempt may succeed (after `retry_after`, or the type's backoff).
    Retryable {
        code: String,
        message: String,
        retry_after: Option<Duration>,
    },
    /// No attempt will succeed.
    Permanent { code: String, message: String },
    /// The local route cannot do it; an external worker may, if the task allows.
    Fallback { reason: String },
    /// The handler stopped because cancellation was requested.
    Cancelled,
}

impl HandlerError {
    pub fn retryable(message: impl Into<String>) -> Self {
        HandlerError::Retryable {
            code: "handler_error".into(),
            message: message.into(),
            retry_after: None,
        }
    }

    pub fn permanent(message: impl Into<String>) -> Self {
        HandlerError::Permanent {
            code: "permanent_error".into(),
            message: message.into(),
        }
    }
}

/// Why a handler must stop, as learned at a heartbeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Stop {
    #[error("cancellation was requested")]
    Cancelled,
    #[error("the lease was lost or the task is gone")]
    Lost,
}

/// What one attempt runs with.
#[derive(Clone)]
pub struct TaskContext {
    pub task: Arc<ClaimedTask>,
    pub(crate) pool: deadpool_postgres::Pool,
    pub(crate) cancel: CancellationToken,
    pub(crate) lost: CancellationToken,
}

impl TaskContext {
    pub fn input(&self) -> &serde_json::Value {
        &self.task.input
    }

    /// The snapshot of the previous attempt, when the task is resumed.
    pub fn snapshot(&self) -> Option<&serde_json::Value> {
        self.task.snapshot.as_ref()
    }

    /// Resolves once the owner asked to cancel (seen at a heartbeat).
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Heartbeats now with progress, phase, snapshot and events. An error says the
    /// handler must stop: cancellation was requested, or the lease is lost. A database
    /// hiccup is not an error here: the background heartbeat keeps the lease and retries.
    pub async fn report(&self, beat: Beat) -> Result<(), Stop> {
        let Ok(object) = self.pool.get().await else {
            return Ok(());
        };
        let answer = lease::heartbeat(
            crate::store::client(&object),
            self.task.id,
            self.task.lease_token,
            &beat,
        )
        .await;
        match answer {
            Ok(answer) if answer.cancel_requested => {
                self.cancel.cancel();
                Err(Stop::Cancelled)
            }
            Ok(_) => Ok(()),
            Err(LeaseError::Lost | LeaseError::Gone) => {
                self.lost.cancel();
                Err(Stop::Lost)
            }
            Err(_) => Ok(()),
        }
    }
}

/// Task types this process knows, with the in-process handler of each one that has one.
#[derive(Clone, Default)]
pub struct Registry {
    types: HashMap<String, (TaskType, Option<Arc<dyn Handler>>)>,
}

impl Registry {
    /// A registry of `types` with the built-in executors; `custom` supplies handlers for
    /// types whose executor is `custom`.
    pub fn new(
        types: Vec<TaskType>,
        mut custom: HashMap<String, Arc<dyn Handler>>,
    ) -> anyhow::Result<Self> {
        let mut registry = Registry::default();
        for task_type in types {
            let handler: Option<Arc<dyn Handler>> = match task_type.executor {
                Executor::Noop => Some(Arc::new(super::executors::Noop)),
                Executor::Sleep => Some(Arc::new(super::executors::Sleep)),
                Executor::Http => Some(Arc::new(super::executors::Http::new(&task_type)?)),
                Executor::Remote => None,
                Executor::Custom => Some(custom.remove(&task_type.name).ok_or_else(|| {
                    anyhow::anyhow!("no handler registered for {:?}", task_type.name)
                })?),
            };
            registry
                .types
                .insert(task_type.name.clone(), (task_type, handler));
        }
        Ok(registry)
    }

    pub fn get(&self, name: &str) -> Option<&TaskType> {
        self.types.get(name).map(|(task_type, _)| task_type)
    }

    pub fn handler(&self, name: &str) -> Option<&Arc<dyn Handler>> {
        self.types
            .get(name)
            .and_then(|(_, handler)| handler.as_ref())
    }

    /// Names of every registered type, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.types.keys().cloned().collect();
        names.sort();
        names
    }

    /// Names of the types this process runs in-process (remote types excluded).
    pub fn runnable(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .types
            .iter()
            .filter(|(_, (_, h))| h.is_some())
            .map(|(name, _)| name.clone())
            .collect();
        names.sort();
        names
    }
}
