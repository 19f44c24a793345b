//! Group commit of single submits: concurrent [`super::Tasklane::submit`] calls are
//! gathered and written by the batch statement (`store::submit_batch`, one multi-row
//! insert for the new tasks no fence, stop or limit applies to), each answered exactly
//! as alone. The database's CPU per submit falls as groups grow: a transaction, its
//! commit and the statement's fixed cost are shared by every submit of the group.
//!
//! No timer: a group is whatever queued while the previous groups were being written,
//! and whatever the tasks already ready to run queue when the runtime runs them
//! ([`crate::gather::ready`]: requests answered by one group's commit come back
//! together). At most `groups` groups are in flight (`--submit-groups`); the next one
//! takes everything waiting (up to [`Coalescer::MAX_GROUP`]) as soon as one of them
//! ends. A submit that arrives while a flusher is free therefore goes at once, alone or
//! with the submits ready beside it, waiting for no clock (the latency of a quiet
//! replica is unchanged), and groups grow only while submits are queueing anyway.
//!
//! On in `tasklane serve` (`--submit-groups`, see `src/server/`): the batch statement
//! is cheap enough that, end to end over HTTP, a couple of groups serve clients flat
//! out with more submits a second and a lower tail latency than a statement each.
//!
//! The queue is bounded ([`Coalescer::QUEUED`]): when the database stalls, submits wait
//! for room instead of piling up, and a submit whose caller has gone (a client that
//! disconnected) is dropped unwritten when its group has its connection: it was never
//! answered, so it was never acknowledged.
//!
//! Items are independent: a group's statement that fails as a whole (a deadlock with
//! another batch, any unexpected error) rolled back everything of it, and each of its
//! items is then submitted alone, so one item's error cannot fail another.

use super::groups::{Bounds, Groups, Pending};
use super::ServiceError;
use crate::store::submit::{self, Submission};
use crate::store::submit_batch;
use crate::task::{NewTask, TaskId};

/// The handle submits go through; cloning shares the queue.
#[derive(Clone)]
pub struct Coalescer {
    groups: Groups<(TaskId, NewTask), Submission>,
}

impl Coalescer {
    /// Most submits in one group: the gain per item flattens beyond this, while a larger
    /// group holds more owner locks for longer.
    pub const MAX_GROUP: usize = 64;

    /// Most submits waiting for a group: sixteen full groups. Beyond that a submit waits
    /// for room.
    pub const QUEUED: usize = 16 * Coalescer::MAX_GROUP;

    /// Starts the gathering loop on the current runtime, writing at most `groups` (at
    /// least 1) groups at once, each on a connection of `pool`; it ends when every handle
    /// is dropped.
    pub fn start(pool: crate::store::Pool, groups: usize) -> Self {
        let bounds = Bounds {
            flights: groups,
            max_group: Coalescer::MAX_GROUP,
            queued: Coalescer::QUEUED,
        };
        Coalescer {
            groups: Groups::start(pool, bounds, "submit", write),
        }
    }

    /// Submits `task` as task `id` (if created) in the next group and waits for its
    /// answer, which is committed when it arrives.
    pub async fn submit(&self, id: TaskId, task: NewTask) -> Result<Submission, ServiceError> {
        self.groups.ask((id, task)).await
    }
}

/// Writes one group on its connection and answers each of its submits.
async fn write(client: crate::store::Pooled, group: Vec<Pending<(TaskId, NewTask), Submission>>) {
    if group.len() > 1 {
        let items: Vec<_> = group.iter().map(|p| (p.item.0, &p.item.1)).collect();
        match submit_batch::submit_many(&client, &items).await {
            Ok(answers) => {
                for (pending, answer) in group.into_iter().zip(answers) {
                    let _ = pending.answer.send(answer.map_err(ServiceError::from));
                }
                return;
            }
            // A deadlock with another batch is expected now and then; anything else is
            // worth a warning, with the SQLSTATE (a server error displays as "db error").
            Err(error) if submit_batch::is_retryable(&error) => {
                tracing::debug!(%error, items = group.len(), "submit group deadlocked; each alone");
            }
            Err(error) => {
                let sqlstate = error.code().map(|code| code.code());
                match crate::store::connect::lost::lost(&error) {
                    Some(_) => crate::telemetry::outage::failed("submit group", &error, sqlstate),
                    None => {
                        tracing::warn!(%error, sqlstate, items = group.len(), "submit group failed; each alone")
                    }
                }
            }
        }
    }
    for pending in group {
        let (id, task) = &pending.item;
        let answer = submit::submit_pooled(&client, *id, task).await;
        let _ = pending.answer.send(answer.map_err(ServiceError::from));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::{Executor, SubmitRequest, TaskType};
    use futures_util::FutureExt as _;

    fn task(key: usize) -> NewTask {
        let request: SubmitRequest = serde_json::from_value(serde_json::json!({
            "task_type": "noop", "scope_id": "s", "effect_key": key.to_string(), "input": {}
        }))
        .unwrap();
        request
            .resolve("app", &TaskType::new("noop", Executor::Noop), 1024)
            .unwrap()
    }

    /// The queue holds exactly [`Coalescer::QUEUED`] submits; the next waits for room
    /// and goes in once a group is taken off the queue. On this current-thread runtime
    /// the gatherer runs only when the test yields, and its group waits for ever on a
    /// pool of no connections.
    #[tokio::test(flavor = "current_thread")]
    async fn the_queue_holds_exactly_its_bound_and_the_next_submit_waits_for_room() {
        let pool = crate::store::connect::Database::from_url("host=127.0.0.1")
            .unwrap()
            .pool(0)
            .unwrap();
        let coalescer = Coalescer::start(pool, 1);
        // Each submit is polled once: it is queued and waits for its answer. Unconstrained:
        // tokio's cooperative budget would otherwise refuse the 129th send in one poll.
        let queue = |key| {
            tokio::task::unconstrained(coalescer.submit(crate::task::new_task_id(), task(key)))
        };
        for key in 0..Coalescer::QUEUED - 1 {
            assert!(queue(key).now_or_never().is_none());
        }
        assert_eq!(coalescer.groups.room(), 1);
        assert!(queue(Coalescer::QUEUED).now_or_never().is_none());
        assert_eq!(coalescer.groups.room(), 0);

        let mut next = Box::pin(queue(Coalescer::QUEUED + 1));
        assert!((&mut next).now_or_never().is_none());
        assert_eq!(coalescer.groups.room(), 0, "the next submit found no room");
        for _ in 0..100 {
            if coalescer.groups.room() > 0 {
                break;
            }
            tokio::task::yield_now().await;
        }
        // The gatherer took a full group; the waiting submit holds one of its places.
        assert!((&mut next).now_or_never().is_none());
        assert_eq!(coalescer.groups.room(), Coalescer::MAX_GROUP - 1);
    }
}
