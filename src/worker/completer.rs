//! Group commit of successful completions. Attempts that finish at about the same time
//! hand their results to one completer, which settles them with one fenced statement
//! (`Tasklane::complete_many`) instead of one transaction and round trip each; every
//! attempt still awaits and learns its own outcome (settled, lease lost, task gone).
//!
//! Batching is natural, not timed: the first completion goes out as soon as the runtime
//! has run the other tasks ready beside it ([`crate::gather::ready`]: the attempts of
//! one claim end together), and whatever arrives while a flush is in flight rides the
//! next one. So an idle worker adds no latency, and a busy one commits in batches as
//! large as its completion rate makes them. At most `max_in_flight` flushes run at
//! once (each on its own pooled connection); a failed batch falls back to settling its
//! completions one by one, so a single bad row cannot fail its neighbours.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot, Semaphore};
use uuid::Uuid;

use crate::service::{Completion, ServiceError, Success, Tasklane};

/// Largest batch one flush settles.
pub const DEFAULT_MAX_BATCH: usize = 256;
/// Flushes running at once: one, so what completes while it commits rides the next
/// flush together (a second flush in flight halves the batches and adds their commits
/// without settling more a second).
pub const DEFAULT_MAX_IN_FLIGHT: usize = 1;

struct Request {
    completion: Completion,
    reply: oneshot::Sender<Result<(), ServiceError>>,
}

/// A handle on a running completer; cloning shares it. The completer stops once every
/// handle is dropped and its queue is empty.
#[derive(Clone)]
pub struct Completer {
    requests: mpsc::UnboundedSender<Request>,
}

impl Completer {
    /// Starts a completer settling through `tasklane`.
    pub fn start(tasklane: Tasklane, max_batch: usize, max_in_flight: usize) -> Completer {
        let (requests, queue) = mpsc::unbounded_channel();
        tokio::spawn(run(
            tasklane,
            queue,
            max_batch.max(1),
            Arc::new(Semaphore::new(max_in_flight.max(1))),
        ));
        Completer { requests }
    }

    /// Settles one attempt as succeeded, fenced on its lease; resolves once the batch
    /// carrying it has committed. Same answers as [`Tasklane::complete`].
    pub async fn complete(
        &self,
        id: Uuid,
        lease_token: Uuid,
        success: Success,
    ) -> Result<(), ServiceError> {
        let (reply, answer) = oneshot::channel();
        let request = Request {
            completion: Completion {
                id,
                lease_token,
                success,
            },
            reply,
        };
        if self.requests.send(request).is_err() {
            // The completer is gone (runtime shutting down): leave the lease to expire.
            return Err(ServiceError::LeaseLost);
        }
        answer.await.unwrap_or(Err(ServiceError::LeaseLost))
    }
}

async fn run(
    tasklane: Tasklane,
    mut queue: mpsc::UnboundedReceiver<Request>,
    max_batch: usize,
    in_flight: Arc<Semaphore>,
) {
    let mut batch = Vec::with_capacity(max_batch);
    while queue.recv_many(&mut batch, max_batch).await > 0 {
        let permit = in_flight
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        // What arrived while we waited for a free flush, and what the attempts ready
        // beside them (the attempts of one claim end together) queue now, go along.
        crate::gather::ready(&mut queue, &mut batch, max_batch).await;
        let flushing = std::mem::replace(&mut batch, Vec::with_capacity(max_batch));
        let tasklane = tasklane.clone();
        tokio::spawn(async move {
            flush(&tasklane, flushing).await;
            drop(permit);
        });
    }
}

async fn flush(tasklane: &Tasklane, mut batch: Vec<Request>) {
    batch.sort_unstable_by_key(|r| r.completion.id);
    let (completions, replies): (Vec<Completion>, Vec<_>) =
        batch.into_iter().map(|r| (r.completion, r.reply)).unzip();
    match tasklane.complete_many(&completions).await {
        Ok(answers) => {
            for (reply, answer) in replies.into_iter().zip(answers) {
                let _ = reply.send(answer);
            }
        }
        Err(error) => {
            match error.is_unavailable() {
                true => {
                    crate::telemetry::outage::failed("batched completion", &error, error.sqlstate())
                }
                false => {
                    tracing::warn!(%error, sqlstate = error.sqlstate(), tasks = completions.len(), "batched completion failed; settling one by one")
                }
            }
            for (c, reply) in completions.iter().zip(replies) {
                let answer = tasklane
                    .complete(None, c.id, c.lease_token, &c.success)
                    .await;
                let _ = reply.send(answer);
            }
        }
    }
}
