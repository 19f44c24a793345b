//! The in-process fan-out of live output deltas: the replica's shared listener (see
//! `watch`) hands each `tasklane_output` notification here, and every output stream
//! of its task gets a copy. A task nobody follows costs one map lookup per delta.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;
use uuid::Uuid;

use crate::task::live::Delta;

/// Deltas a slow stream may fall behind by before it must re-read the stored text.
const BEHIND: usize = 256;

/// The fan-out; cloning shares it.
#[derive(Clone, Default)]
pub struct OutputWatch {
    tasks: Arc<Mutex<HashMap<Uuid, broadcast::Sender<Arc<Delta>>>>>,
}

impl OutputWatch {
    /// Deltas of `task` from now on; take it before reading the stored text, so
    /// nothing published after the read is missed.
    pub fn subscribe(&self, task: Uuid) -> Deltas {
        let mut tasks = self.lock();
        let sender = tasks
            .entry(task)
            .or_insert_with(|| broadcast::channel(BEHIND).0);
        Deltas {
            watch: self.clone(),
            task,
            receiver: Some(sender.subscribe()),
        }
    }

    /// Hands one notification's payload to the streams of its task.
    pub fn publish(&self, payload: &str) {
        let Ok(delta) = serde_json::from_str::<Delta>(payload) else {
            tracing::debug!("a live output payload that is not a delta");
            return;
        };
        if let Some(sender) = self.lock().get(&delta.task_id) {
            let _ = sender.send(Arc::new(delta));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, broadcast::Sender<Arc<Delta>>>> {
        self.tasks.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One stream's deltas; dropping it forgets the task once nobody follows it.
pub struct Deltas {
    watch: OutputWatch,
    task: Uuid,
    receiver: Option<broadcast::Receiver<Arc<Delta>>>,
}

/// What [`Deltas::next`] gives.
pub enum Next {
    Delta(Arc<Delta>),
    /// Deltas were dropped because this stream fell behind.
    Behind,
}

impl Deltas {
    /// The next delta, waiting for it.
    pub async fn next(&mut self) -> Next {
        let receiver = self.receiver.as_mut().expect("a receiver until dropped");
        loop {
            match receiver.recv().await {
                Ok(delta) => return Next::Delta(delta),
                Err(broadcast::error::RecvError::Lagged(_)) => return Next::Behind,
                // The sender lives while this receiver does.
                Err(broadcast::error::RecvError::Closed) => std::future::pending::<()>().await,
            }
        }
    }

    /// A delta that has arrived already, without waiting.
    pub fn ready(&mut self) -> Option<Next> {
        let receiver = self.receiver.as_mut().expect("a receiver until dropped");
        match receiver.try_recv() {
            Ok(delta) => Some(Next::Delta(delta)),
            Err(broadcast::error::TryRecvError::Lagged(_)) => Some(Next::Behind),
            Err(_) => None,
        }
    }
}

impl Drop for Deltas {
    fn drop(&mut self) {
        let mut tasks = self.watch.lock();
        drop(self.receiver.take());
        if tasks
            .get(&self.task)
            .is_some_and(|s| s.receiver_count() == 0)
        {
            tasks.remove(&self.task);
        }
    }
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt as _;

    use super::*;

    #[tokio::test]
    async fn deltas_reach_the_streams_of_their_task_only() {
        let watch = OutputWatch::default();
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let mut sa = watch.subscribe(a);
        let sb = watch.subscribe(b);
        let delta = Delta {
            task_id: a,
            attempt: 1,
            offset: 0,
            text: "hi".into(),
        };
        watch.publish(&serde_json::to_string(&delta).unwrap());
        watch.publish("not a delta");
        match sa.next().now_or_never() {
            Some(Next::Delta(d)) => assert_eq!(*d, delta),
            _ => panic!("no delta"),
        }
        assert!(sa.ready().is_none());
        drop(sb);
        assert_eq!(watch.lock().len(), 1);
        drop(sa);
        assert!(watch.lock().is_empty());
    }
}
