//! One attempt of one claimed task: the handler runs beside a heartbeat loop (every
//! lease/3) under the attempt timeout; the outcome is written fenced on the lease. A
//! lost lease or a deleted task drops the handler and writes nothing; a shutdown past
//! its grace period hands the lease back so another replica takes the task at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::service::{self, ClaimedTask, ServiceError, Success, Tasklane};
use crate::task::attempt::Facts;
use crate::task::settlement::Report;
use crate::task::{Locality, TaskState};
use crate::telemetry::spans;

use super::completer::Completer;
use super::handler::{HandlerError, TaskContext};
use super::heartbeats::Heartbeats;
use super::registry::HandlerRegistry;

pub struct Attempt {
    task: Arc<ClaimedTask>,
    tasklane: Tasklane,
    handlers: Arc<HandlerRegistry>,
    abort: CancellationToken,
    completer: Completer,
    heartbeats: Heartbeats,
    locality: Locality,
}

/// How the handler's run ended, as seen by the runner. One value an attempt, moved once
/// into the settlement: its size does not matter, and a box would only cost an allocation.
#[allow(clippy::large_enum_variant)]
enum RunEnd {
    Finished(Result<Success, HandlerError>),
    TimedOut,
    Lost,
    Aborted,
}

impl Attempt {
    pub fn new(
        task: ClaimedTask,
        tasklane: Tasklane,
        handlers: Arc<HandlerRegistry>,
        abort: CancellationToken,
        completer: Completer,
        heartbeats: Heartbeats,
        locality: Locality,
    ) -> Self {
        Attempt {
            task: Arc::new(task),
            tasklane,
            handlers,
            abort,
            completer,
            heartbeats,
            locality,
        }
    }

    /// Runs the attempt in a `tasklane.attempt` span of the task's trace and records
    /// its duration and outcome.
    pub async fn run(self) {
        let span = tracing::info_span!(
            "tasklane.attempt",
            task = %self.task.id,
            task_type = %self.task.task_type,
            attempt = self.task.attempt,
            route = self.locality.as_str(),
            outcome = tracing::field::Empty,
        );
        spans::continue_trace(&span, self.task.traceparent.as_deref());
        let started = Instant::now();
        let outcome = self.attempt().instrument(span.clone()).await;
        span.record("outcome", outcome);
        let instruments = self.tasklane.instruments();
        let seconds = started.elapsed().as_secs_f64();
        instruments.attempt(
            &self.task.task_type,
            self.locality.as_str(),
            outcome,
            seconds,
        );
        if outcome == "lost" {
            instruments.lease_lost(&self.task.task_type);
        }
    }

    /// The attempt itself; its outcome as an attempt-duration label.
    async fn attempt(&self) -> &'static str {
        let Some(handler) = self.handlers.get(&self.task.task_type).cloned() else {
            // Claims only name types this worker has handlers for; anything else is a bug.
            tracing::error!(task_type = %self.task.task_type, "claimed a task without a handler");
            return "error";
        };
        let ctx = TaskContext {
            task: self.task.clone(),
            tasklane: self.tasklane.clone(),
            cancel: CancellationToken::new(),
            lost: CancellationToken::new(),
            facts: Default::default(),
            locality: self.locality,
        };
        // The claim loop's batcher (a task of its own, not polled beside the handler: a
        // handler that blocks its thread must not starve the heartbeat) keeps the lease.
        let heartbeat = self
            .heartbeats
            .register(&self.task, ctx.cancel.clone(), ctx.lost.clone());
        // The handler's recorded facts outlive its run: however it ends, they are written.
        let recorded = ctx.clone();
        let timeout = Duration::from_secs(self.task.attempt_timeout_seconds as u64);
        let lost = ctx.lost.clone();
        let run_end = tokio::select! {
            result = tokio::time::timeout(timeout, handler.run(ctx)) => match result {
                Ok(result) => RunEnd::Finished(result),
                Err(_) => RunEnd::TimedOut,
            },
            _ = lost.cancelled() => RunEnd::Lost,
            _ = self.abort.cancelled() => RunEnd::Aborted,
        };
        drop(heartbeat);
        match self.settle(run_end, recorded.facts()).await {
            Ok(outcome) => outcome,
            Err(error @ (ServiceError::LeaseLost | ServiceError::TaskGone)) => {
                tracing::debug!(task = %self.task.id, %error, "late write refused");
                "lost"
            }
            Err(error) if error.is_unavailable() => {
                // Its lease runs out and the rescuer applies the restart policy.
                crate::telemetry::outage::failed("settle a task", &error, error.sqlstate());
                "error"
            }
            Err(error) => {
                tracing::warn!(task = %self.task.id, %error, "settle task");
                "error"
            }
        }
    }

    async fn settle(&self, run_end: RunEnd, facts: Facts) -> Result<&'static str, ServiceError> {
        let id = self.task.id;
        let token = self.task.lease_token;
        let timed_out = matches!(run_end, RunEnd::TimedOut);
        let report = match run_end {
            // The rescuer ends a lost attempt (outcome `lost`); what it recorded is gone.
            RunEnd::Lost => return Ok("lost"),
            RunEnd::Aborted => {
                self.tasklane.hand_back(id, token).await?;
                return Ok("handed_back");
            }
            // Group commit with the other attempts finishing now (see completer.rs).
            RunEnd::Finished(Ok(mut success)) => {
                success.facts = merged(success.facts, facts);
                let span = tracing::info_span!("tasklane.settle", task = %id);
                self.completer
                    .complete(id, token, success)
                    .instrument(span)
                    .await?;
                return Ok("succeeded");
            }
            RunEnd::Finished(Err(HandlerError::Retryable {
                code,
                message,
                retry_after,
            })) => Report::Error {
                code,
                message,
                retryable: true,
                retry_after,
            },
            RunEnd::Finished(Err(HandlerError::Permanent { code, message })) => Report::Error {
                code,
                message,
                retryable: false,
                retry_after: None,
            },
            RunEnd::Finished(Err(HandlerError::Fallback { reason })) => Report::Fallback { reason },
            RunEnd::Finished(Err(HandlerError::Deferred { message, wait })) => {
                Report::Deferred { message, wait }
            }
            RunEnd::Finished(Err(HandlerError::Cancelled)) => Report::Cancelled,
            RunEnd::TimedOut => Report::TimedOut,
        };
        let deferred = matches!(report, Report::Deferred { .. });
        let reported = service::Reported {
            report,
            facts,
            usage_units: None,
        };
        let state = self.tasklane.settle_claimed(&self.task, reported).await?;
        Ok(match state {
            TaskState::Cancelled => "cancelled",
            _ if timed_out => "timed_out",
            TaskState::WaitingForRetry if deferred => "deferred",
            TaskState::WaitingForRetry => "retry",
            TaskState::WaitingForExternalFallback => "fallback",
            TaskState::Succeeded => "succeeded",
            _ => "failed",
        })
    }
}

/// The facts of a successful attempt: what the handler returned with its result wins,
/// field by field, over what it recorded on its context.
fn merged(returned: Facts, recorded: Facts) -> Facts {
    Facts {
        provenance: returned.provenance.or(recorded.provenance),
        usage: returned.usage.or(recorded.usage),
    }
}
