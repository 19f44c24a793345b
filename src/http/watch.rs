//! How `?wait=` and event streams learn that a task changed, on whichever replica it
//! changed, without a poll per request. Two shared sources per replica, fanned out
//! in-process to the waiters of each task:
//!
//! - one LISTEN connection on [`EVENTS_CHANNEL`]: a trigger NOTIFYs the tasks whose
//!   terminal event or worker output a statement wrote, at commit, so `?wait=` answers
//!   within milliseconds. The same connection listens on [`OUTPUT_CHANNEL`] for live
//!   output deltas (handed to [`OutputWatch`]): one connection, so a stream hears an
//!   attempt's last delta before the terminal event committed after it;
//! - one poll every [`SHARED_POLL`] reading the last event seq of every watched task in
//!   one query: it carries the other events (queued, running, progress), which are not
//!   notified because a notifying commit takes a cluster-wide lock, and covers lost
//!   notifications or LISTEN being unavailable (PgBouncer in transaction mode).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::output_watch::{Deltas, OutputWatch};
use crate::service::listen::{self, Listener, EVENTS_CHANNEL, OUTPUT_CHANNEL};
use crate::service::Tasklane;

/// How often the shared poll reads the watched tasks' last event seqs.
pub const SHARED_POLL: Duration = Duration::from_millis(500);
/// A waiter re-reads at least this often, whatever the sources say (a safety net).
pub const SAFETY_POLL: Duration = Duration::from_secs(10);

/// The fan-out of one replica's listener: a notification costs one map lookup, however
/// many waiters there are. Cloning shares it.
#[derive(Clone, Default)]
pub struct TaskWatch {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Tasks someone waits for, each with a generation bumped on every notification.
    tasks: Mutex<HashMap<Uuid, Entry>>,
    /// Bumped when notifications may have been missed (LISTEN (re)established).
    everything: watch::Sender<u64>,
    /// Live output deltas, by task.
    output: OutputWatch,
}

struct Entry {
    generation: watch::Sender<u64>,
    waiters: usize,
    /// What the shared poll last saw: `None` before its first look, then the task's
    /// last event seq (`None` inside once the task is gone).
    polled: Option<Option<i32>>,
}

impl TaskWatch {
    /// A waiter for `task`; take it before reading the database, so nothing that
    /// happens after the read is missed.
    pub fn subscribe(&self, task: Uuid) -> Waiter {
        let mut tasks = self.inner.tasks.lock().expect("watch map lock");
        let entry = tasks.entry(task).or_insert_with(|| Entry {
            generation: watch::channel(0).0,
            waiters: 0,
            polled: None,
        });
        entry.waiters += 1;
        Waiter {
            watch: self.clone(),
            task,
            own: entry.generation.subscribe(),
            everything: self.inner.everything.subscribe(),
        }
    }

    /// Live output deltas of `task` from now on (see [`OutputWatch::subscribe`]).
    pub fn output(&self, task: Uuid) -> Deltas {
        self.inner.output.subscribe(task)
    }

    fn notify(&self, task: Uuid) {
        let tasks = self.inner.tasks.lock().expect("watch map lock");
        if let Some(entry) = tasks.get(&task) {
            entry.generation.send_modify(|g| *g = g.wrapping_add(1));
        }
    }

    fn notify_everything(&self) {
        self.inner
            .everything
            .send_modify(|g| *g = g.wrapping_add(1));
    }

    /// Polls the watched tasks' last event seqs every [`SHARED_POLL`] until `shutdown`,
    /// waking the waiters of every task whose seq moved (or that was deleted).
    pub async fn run_poller(self, tasklane: Tasklane, shutdown: CancellationToken) {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(SHARED_POLL) => {}
                _ = shutdown.cancelled() => return,
            }
            let ids: Vec<Uuid> = self
                .inner
                .tasks
                .lock()
                .expect("watch map lock")
                .keys()
                .copied()
                .collect();
            if ids.is_empty() {
                continue;
            }
            let seqs = tasklane.latest_event_seqs(&ids).await;
            match seqs {
                Ok(seqs) => self.observe(&ids, &seqs),
                Err(error) => tracing::warn!(%error, "watch poll"),
            }
        }
    }

    /// Wakes the waiters of each of `ids` whose last event seq is not what the poll saw
    /// before (the first look always wakes: a change may fall between a waiter's read
    /// and that look).
    fn observe(&self, ids: &[Uuid], seqs: &HashMap<Uuid, i32>) {
        let mut tasks = self.inner.tasks.lock().expect("watch map lock");
        for id in ids {
            let Some(entry) = tasks.get_mut(id) else {
                continue;
            };
            let now = Some(seqs.get(id).copied());
            if entry.polled != now {
                entry.polled = now;
                entry.generation.send_modify(|g| *g = g.wrapping_add(1));
            }
        }
    }

    /// Listens on a dedicated connection until `shutdown`, reconnecting after failures.
    pub async fn run(self, database_url: String, shutdown: CancellationToken) {
        let channels = [EVENTS_CHANNEL, OUTPUT_CHANNEL];
        listen::listen_all(database_url, &channels, "task events", self, shutdown).await
    }
}

impl Listener for TaskWatch {
    /// Anything that happened before the LISTEN took effect is re-read.
    fn listening(&mut self) {
        self.notify_everything();
    }

    /// A payload names the tasks one statement ended or wrote output for, comma
    /// separated: one notification a statement (one per 200 tasks, for the payload
    /// limit), not one a task.
    fn notified(&mut self, payload: &str) {
        for id in payload.split(',').filter_map(|id| Uuid::parse_str(id).ok()) {
            self.notify(id);
        }
    }

    fn notified_on(&mut self, channel: &str, payload: &str) {
        match channel {
            OUTPUT_CHANNEL => self.inner.output.publish(payload),
            _ => self.notified(payload),
        }
    }
}

/// One waiter on one task; dropping it (a client gone) forgets only this waiter.
pub struct Waiter {
    watch: TaskWatch,
    task: Uuid,
    own: watch::Receiver<u64>,
    everything: watch::Receiver<u64>,
}

impl Waiter {
    /// Returns when the task may have changed: it was notified or its seq moved,
    /// notifications were possibly missed, or the safety poll came due.
    pub async fn changed(&mut self) {
        tokio::select! {
            _ = self.own.changed() => {}
            _ = self.everything.changed() => {}
            _ = tokio::time::sleep(SAFETY_POLL) => {}
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        let mut tasks = self.watch.inner.tasks.lock().expect("watch map lock");
        if let Some(entry) = tasks.get_mut(&self.task) {
            entry.waiters -= 1;
            if entry.waiters == 0 {
                tasks.remove(&self.task);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt as _;

    use super::*;

    // A waiter has changed at once or not at all here (every change is made before the
    // look), so the tests ask "ready now?" instead of waiting against a clock.

    #[tokio::test]
    async fn a_payload_wakes_the_waiters_of_each_task_it_names() {
        let mut watch = TaskWatch::default();
        let (a, b, c) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let (mut wa, mut wb, mut wc) = (watch.subscribe(a), watch.subscribe(b), watch.subscribe(c));
        Listener::notified(&mut watch, &format!("{a},not-an-id,{b}"));
        assert!(wa.changed().now_or_never().is_some());
        assert!(wb.changed().now_or_never().is_some());
        assert!(wc.changed().now_or_never().is_none());
        Listener::notified(&mut watch, &c.to_string());
        assert!(wc.changed().now_or_never().is_some());
    }

    #[tokio::test]
    async fn waiters_hear_their_task_only_and_are_forgotten_when_dropped() {
        let watch = TaskWatch::default();
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let mut waiter = watch.subscribe(a);
        watch.notify(b);
        assert!(waiter.changed().now_or_never().is_none());
        watch.notify(a);
        assert!(waiter.changed().now_or_never().is_some());
        watch.notify_everything();
        assert!(waiter.changed().now_or_never().is_some());
        // The poll wakes on its first look and on every move of the seq, not otherwise.
        watch.observe(&[a], &HashMap::from([(a, 1)]));
        assert!(waiter.changed().now_or_never().is_some());
        watch.observe(&[a], &HashMap::from([(a, 1)]));
        assert!(waiter.changed().now_or_never().is_none());
        watch.observe(&[a], &HashMap::from([(a, 2)]));
        assert!(waiter.changed().now_or_never().is_some());
        watch.observe(&[a], &HashMap::new());
        assert!(waiter.changed().now_or_never().is_some());
        let second = watch.subscribe(a);
        drop(waiter);
        assert_eq!(watch.inner.tasks.lock().unwrap().len(), 1);
        drop(second);
        assert!(watch.inner.tasks.lock().unwrap().is_empty());
    }
}
