//! Concurrent requests gathered into groups, each group served on one connection: the
//! mechanism under the group commit of submits (`service::submit_coalesce`) and the
//! gathered token lookups (`service::token_lookups`).
//!
//! No timer: a group is whatever queued while the previous groups were being served,
//! and whatever the tasks already ready to run queue when the runtime runs them
//! ([`crate::gather::ready`]). At most `flights` groups are served at once; the next one
//! takes everything waiting (up to its largest group) as soon as one of them ends, so a
//! request that finds a flight free goes at once and a quiet replica waits for no clock.
//!
//! The queue is bounded: when the database stalls, requests wait for room instead of
//! piling up. A request whose caller has gone is dropped unserved when its group has its
//! connection (waiting for the connection is when callers give up). Without a
//! connection, each request is answered as it would be alone.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot, Semaphore};

use super::ServiceError;
use crate::store::{Pool, Pooled};

/// One request waiting for its group.
pub struct Pending<I, A> {
    pub item: I,
    pub answer: oneshot::Sender<Result<A, ServiceError>>,
}

/// The handle requests go through; cloning shares the queue.
pub struct Groups<I, A> {
    queue: mpsc::Sender<Pending<I, A>>,
    /// What a request is, for the errors of a shutdown (`submit`, `token lookup`).
    what: &'static str,
}

impl<I, A> Clone for Groups<I, A> {
    fn clone(&self) -> Self {
        Groups {
            queue: self.queue.clone(),
            what: self.what,
        }
    }
}

/// The sizes of a kind of group.
pub struct Bounds {
    /// Groups served at once (at least 1).
    pub flights: usize,
    /// Most requests in one group.
    pub max_group: usize,
    /// Most requests waiting for a group; beyond that a request waits for room.
    pub queued: usize,
}

impl<I: Send + 'static, A: Send + 'static> Groups<I, A> {
    /// Starts the gathering loop on the current runtime; `serve` answers each request of
    /// a group on the group's connection. It ends when every handle is dropped.
    pub fn start<F, Fut>(pool: Pool, bounds: Bounds, what: &'static str, serve: F) -> Self
    where
        F: Fn(Pooled, Vec<Pending<I, A>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let (queue, waiting) = mpsc::channel(bounds.queued);
        tokio::spawn(gather(pool, bounds, waiting, Arc::new(serve)));
        Groups { queue, what }
    }

    /// `item`'s answer, served in the next group.
    pub async fn ask(&self, item: I) -> Result<A, ServiceError> {
        let (answer, answered) = oneshot::channel();
        self.queue
            .send(Pending { item, answer })
            .await
            .map_err(|_| ServiceError::Pool(format!("{}s are shutting down", self.what)))?;
        answered
            .await
            .map_err(|_| ServiceError::Pool(format!("the {} group was dropped", self.what)))?
    }

    /// Room left in the queue.
    #[cfg(test)]
    pub fn room(&self) -> usize {
        self.queue.capacity()
    }
}

/// Waits for a flight to be free, then for a first request, takes everything queued
/// behind it and serves that group on a task of its own.
async fn gather<I, A, F, Fut>(
    pool: Pool,
    bounds: Bounds,
    mut waiting: mpsc::Receiver<Pending<I, A>>,
    serve: Arc<F>,
) where
    I: Send + 'static,
    A: Send + 'static,
    F: Fn(Pooled, Vec<Pending<I, A>>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let flights = Arc::new(Semaphore::new(bounds.flights.max(1)));
    loop {
        let Ok(flight) = flights.clone().acquire_owned().await else {
            return;
        };
        let Some(first) = waiting.recv().await else {
            return;
        };
        let mut group = vec![first];
        // Requests answered by one round trip come back together: let their handlers
        // run and queue their next requests before this group goes.
        crate::gather::ready(&mut waiting, &mut group, bounds.max_group).await;
        let (pool, serve) = (pool.clone(), serve.clone());
        tokio::spawn(async move {
            if let Some((client, group)) = connected(&pool, group).await {
                serve(client, group).await;
            }
            drop(flight);
        });
    }
}

/// The group's connection and its requests whose callers still wait; without a
/// connection, each request answered as it would be alone.
async fn connected<I, A>(
    pool: &Pool,
    mut group: Vec<Pending<I, A>>,
) -> Option<(Pooled, Vec<Pending<I, A>>)> {
    match pool.get().await {
        Ok(client) => {
            group.retain(|pending| !pending.answer.is_closed());
            Some((client, group))
        }
        Err(error) => {
            let error = ServiceError::from(error);
            let message = error.to_string();
            let busy = matches!(error, ServiceError::Pool(_));
            for pending in group {
                let error = match busy {
                    true => ServiceError::Pool(message.clone()),
                    false => ServiceError::Unreachable(message.clone()),
                };
                let _ = pending.answer.send(Err(error));
            }
            None
        }
    }
}
