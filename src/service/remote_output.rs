//! Live output written by remote workers, published through this replica's
//! [`LiveOutput`] exactly as the built-in executors' is (coalesced deltas, the text so
//! far stored a few times a second, nothing per chunk in a table or the WAL). A remote
//! worker's writes are fenced by the caller with a read of its lease (`remote_lease`);
//! here each task has at most one stream, of the attempt whose lease last wrote, so its
//! offsets run on across writes. A stream ends when its worker settles the attempt
//! through this replica (its last text is published before the settlement is written,
//! so observers hear it before the terminal event), when a newer attempt writes, or
//! when a sweep finds its lease no longer held (the worker died, the task was re-claimed,
//! settled elsewhere or deleted).
//!
//! The offsets of an attempt are this replica's count: a worker writes one attempt's
//! output through one replica (one HTTP connection), as the clients' workers do.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use uuid::Uuid;

use super::live_output::{LiveOutput, Writer};
use crate::store::{self, remote_lease};

/// How often streams are checked against their leases.
const SWEEP_EVERY: Duration = Duration::from_secs(5);

/// The remote streams of this replica; cloning shares them.
#[derive(Clone)]
pub struct RemoteOutput {
    live: LiveOutput,
    streams: Arc<Mutex<Streams>>,
}

type Streams = HashMap<Uuid, Stream>;

/// One task's stream: the attempt and lease that write it.
struct Stream {
    attempt: i32,
    lease_token: Uuid,
    writer: Writer,
}

impl RemoteOutput {
    /// Streams published through `live`; starts the sweep on the current runtime (it
    /// ends when every handle is dropped).
    pub fn start(live: LiveOutput, pool: store::Pool) -> Self {
        let streams = Arc::new(Mutex::new(Streams::new()));
        tokio::spawn(sweep(Arc::downgrade(&streams), pool));
        RemoteOutput { live, streams }
    }

    /// Appends `text` to `attempt`'s output, whose lease `lease_token` was just seen to
    /// hold. A write of an older attempt than the task's stream (its lease was lost
    /// after the check) is dropped.
    pub fn push(&self, task: Uuid, attempt: i32, lease_token: Uuid, text: &str) {
        let mut streams = lock(&self.streams);
        if let Some(stream) = streams.get(&task) {
            if stream.attempt > attempt {
                return;
            }
            if stream.attempt == attempt && stream.lease_token == lease_token {
                stream.writer.push(text);
                return;
            }
        }
        let writer = self.live.open(task, attempt);
        writer.push(text);
        // The replaced stream (an older attempt's) ends as it is dropped.
        streams.insert(
            task,
            Stream {
                attempt,
                lease_token,
                writer,
            },
        );
    }

    /// Ends the streams of these leases (those this replica has) and waits, briefly,
    /// until their last text is published: called before the attempts' settlement is
    /// written.
    pub async fn finish(&self, leases: &[(Uuid, Uuid)]) {
        let ending: Vec<Writer> = {
            let mut streams = lock(&self.streams);
            let mut ending = Vec::new();
            for (task, token) in leases {
                if streams.get(task).is_some_and(|s| s.lease_token == *token) {
                    ending.extend(streams.remove(task).map(|s| s.writer));
                }
            }
            ending
        };
        futures_util::future::join_all(ending.into_iter().map(Writer::finish)).await;
    }

    /// How many streams this replica holds.
    pub fn len(&self) -> usize {
        lock(&self.streams).len()
    }

    /// Whether this replica holds no stream.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn lock(streams: &Mutex<Streams>) -> std::sync::MutexGuard<'_, Streams> {
    streams.lock().unwrap_or_else(|e| e.into_inner())
}

/// Every [`SWEEP_EVERY`], drops the streams whose lease is no longer held (one read for
/// all of them).
async fn sweep(streams: Weak<Mutex<Streams>>, pool: store::Pool) {
    let mut tick = tokio::time::interval(SWEEP_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(strong) = streams.upgrade() else {
            return;
        };
        let leases: Vec<(Uuid, Uuid)> = lock(&strong)
            .iter()
            .map(|(task, stream)| (*task, stream.lease_token))
            .collect();
        drop(strong);
        if leases.is_empty() {
            continue;
        }
        let held = match held(&pool, &leases).await {
            Ok(held) => held,
            Err(error) => {
                tracing::warn!(error = %format!("{error:#}"), "check remote output leases");
                continue;
            }
        };
        let Some(strong) = streams.upgrade() else {
            return;
        };
        let mut streams = lock(&strong);
        for (task, token) in leases {
            let lost = streams
                .get(&task)
                .is_some_and(|s| s.lease_token == token && !held.contains(&task));
            if lost {
                streams.remove(&task);
            }
        }
    }
}

async fn held(
    pool: &store::Pool,
    leases: &[(Uuid, Uuid)],
) -> anyhow::Result<std::collections::HashSet<Uuid>> {
    let client = pool.get().await?;
    Ok(remote_lease::held(store::client(&client), leases).await?)
}
