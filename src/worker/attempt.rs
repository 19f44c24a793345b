//! One attempt of one claimed task: the handler runs beside a heartbeat loop (every
//! lease/3) under the attempt timeout; the outcome is written fenced on the lease. A
//! lost lease or a deleted task drops the handler and writes nothing; a shutdown past
//! its grace period hands the lease back so another replica takes the task at once.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::service::{Beat, ClaimedTask, ServiceError, Success, Tasklane};
use crate::task::outcome::Report;

use super::completer::Completer;
use super::handler::{HandlerError, TaskContext};
use super::handlers::Handlers;

pub struct Attempt {
    task: Arc<ClaimedTask>,
    tasklane: Tasklane,
    handlers: Arc<Handlers>,
    abort: CancellationToken,
    completer: Completer,
}

/// How the handler's run ended, as seen by the runner.
enum Ending {
    Finished(Result<Success, HandlerError>),
    TimedOut,
    Lost,
    Aborted,
}

impl Attempt {
    pub fn new(
        task: ClaimedTask,
        tasklane: Tasklane,
        handlers: Arc<Handlers>,
        abort: CancellationToken,
        completer: Completer,
    ) -> Self {
        Attempt {
            task: Arc::new(task),
            tasklane,
            handlers,
            abort,
            completer,
        }
    }

    pub async fn run(self) {
        let Some(handler) = self.handlers.get(&self.task.task_type).cloned() else {
            // Claims only name types this worker has handlers for; anything else is a bug.
            tracing::error!(task_type = %self.task.task_type, "claimed a task without a handler");
            return;
        };
        let ctx = TaskContext {
            task: self.task.clone(),
            tasklane: self.tasklane.clone(),
            cancel: CancellationToken::new(),
            lost: CancellationToken::new(),
        };
        // A task of its own (not polled beside the handler): a handler that blocks its
        // thread must not starve the heartbeat and lose its lease. Measured, the spawn
        // is a microsecond per attempt; the database dominates (benches/RESULTS.md).
        let heartbeat = tokio::spawn(heartbeat_loop(ctx.clone()));
        let timeout = Duration::from_secs(self.task.attempt_timeout_seconds as u64);
        let lost = ctx.lost.clone();
        let ending = tokio::select! {
            result = tokio::time::timeout(timeout, handler.run(ctx)) => match result {
                Ok(result) => Ending::Finished(result),
                Err(_) => Ending::TimedOut,
            },
            _ = lost.cancelled() => Ending::Lost,
            _ = self.abort.cancelled() => Ending::Aborted,
        };
        heartbeat.abort();
        if let Err(error) = self.settle(ending).await {
            match error {
                ServiceError::LeaseLost | ServiceError::TaskGone => {
                    tracing::debug!(task = %self.task.id, %error, "late write refused");
                }
                error => tracing::warn!(task = %self.task.id, %error, "settle task"),
            }
        }
    }

    async fn settle(&self, ending: Ending) -> Result<(), ServiceError> {
        let id = self.task.id;
        let token = self.task.lease_token;
        let report = match ending {
            Ending::Lost => return Ok(()),
            Ending::Aborted => return self.tasklane.hand_back(id, token).await,
            // Group commit with the other attempts finishing now (see completer.rs).
            Ending::Finished(Ok(success)) => {
                return self.completer.complete(id, token, success).await
            }
            Ending::Finished(Err(HandlerError::Retryable {
                code,
                message,
                retry_after,
            })) => Report::Error {
                code,
                message,
                retryable: true,
                retry_after,
            },
            Ending::Finished(Err(HandlerError::Permanent { code, message })) => Report::Error {
                code,
                message,
                retryable: false,
                retry_after: None,
            },
            Ending::Finished(Err(HandlerError::Fallback { reason })) => Report::Fallback { reason },
            Ending::Finished(Err(HandlerError::Cancelled)) => Report::Cancelled,
            Ending::TimedOut => Report::TimedOut,
        };
        self.tasklane
            .settle(None, id, token, report)
            .await
            .map(|_| ())
    }
}

/// Extends the lease every lease/3 until the runner stops it. Cancellation requested or
/// the lease lost is signalled through the context's tokens.
async fn heartbeat_loop(ctx: TaskContext) {
    let period = Duration::from_secs(ctx.task.lease_seconds as u64) / 3;
    loop {
        tokio::time::sleep(period).await;
        match ctx
            .tasklane
            .heartbeat(None, ctx.task.id, ctx.task.lease_token, &Beat::default())
            .await
        {
            Ok(answer) if answer.cancel_requested => ctx.cancel.cancel(),
            Ok(_) => {}
            Err(ServiceError::LeaseLost | ServiceError::TaskGone) => {
                ctx.lost.cancel();
                return;
            }
            Err(error) => tracing::warn!(task = %ctx.task.id, %error, "heartbeat"),
        }
    }
}
