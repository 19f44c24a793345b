//! The `Handler` trait in-process executors implement, and the context an attempt runs
//! with (its task, cancellation and lease-loss signals, and progress reports).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::service::{Beat, ClaimedTask, ServiceError, Success, Tasklane};
use crate::task::attempt::{Facts, Provenance, Usage};
use crate::task::Locality;

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
    /// The local routes cannot do it; an external worker may, if the task allows.
    Fallback { reason: String },
    /// No call was made: every route the attempt may use has its circuit open. The
    /// attempt does not count; the task waits `wait` (see `Report::Deferred`).
    Deferred { message: String, wait: Duration },
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
    pub(crate) tasklane: Tasklane,
    pub(crate) cancel: CancellationToken,
    pub(crate) lost: CancellationToken,
    /// Provenance and usage recorded by the handler, written with the attempt.
    pub(crate) facts: Arc<Mutex<Facts>>,
    /// The locality of the claim loop running the attempt.
    pub(crate) locality: Locality,
}

impl TaskContext {
    pub fn input(&self) -> &serde_json::Value {
        &self.task.input
    }

    /// The snapshot of the previous attempt, when the task is resumed.
    pub fn snapshot(&self) -> Option<&serde_json::Value> {
        self.task.snapshot.as_ref()
    }

    /// The route this attempt runs on: a local claim runs a type's local routes, an
    /// external one (a fallback, or a type with only external routes) the external ones.
    pub fn locality(&self) -> Locality {
        self.locality
    }

    /// Resolves once the owner asked to cancel (seen at a heartbeat).
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Records where this attempt runs: call it before calling a provider, so a failed
    /// or timed-out attempt keeps its provenance too. The last call wins.
    pub fn set_provenance(&self, provenance: Provenance) {
        self.lock_facts().provenance = Some(provenance.bounded());
    }

    /// Records what the provider's answer says produced it: the model that answered
    /// (`model` in an OpenAI-compatible answer) and its system fingerprint, beside the
    /// provenance [`set_provenance`](Self::set_provenance) recorded for the call.
    pub fn set_answered_by(&self, model: Option<String>, system_fingerprint: Option<String>) {
        if let Some(provenance) = self.lock_facts().provenance.as_mut() {
            let answered = Provenance {
                response_model: model,
                system_fingerprint,
                ..provenance.clone()
            };
            *provenance = answered.bounded();
        }
    }

    /// Adds what a provider reported this attempt consumed (whether the call succeeded
    /// or not): it is charged to budgets and summed in the task view.
    pub fn add_usage(&self, usage: Usage) {
        let mut facts = self.lock_facts();
        facts.usage = Some(facts.usage.unwrap_or_default().plus(usage));
    }

    /// What the handler has recorded so far.
    pub(crate) fn facts(&self) -> Facts {
        self.lock_facts().clone()
    }

    fn lock_facts(&self) -> std::sync::MutexGuard<'_, Facts> {
        // A handler that panicked while holding the lock left whole values behind.
        self.facts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Heartbeats now with progress, phase, snapshot and events. An error says the
    /// handler must stop: cancellation was requested, or the lease is lost. A database
    /// hiccup is not an error here: the background heartbeat keeps the lease and retries.
    pub async fn report(&self, beat: Beat) -> Result<(), Stop> {
        let answer = self
            .tasklane
            .heartbeat(None, self.task.id, self.task.lease_token, &beat)
            .await;
        match answer {
            Ok(answer) if answer.cancel_requested => {
                self.cancel.cancel();
                Err(Stop::Cancelled)
            }
            Ok(_) => Ok(()),
            Err(ServiceError::LeaseLost | ServiceError::TaskGone) => {
                self.lost.cancel();
                Err(Stop::Lost)
            }
            Err(_) => Ok(()),
        }
    }
}
