//! The publishing side of live output (`task::live`): a replica's running model calls
//! hand their text to one [`LiveOutput`] as it arrives, and one loop writes for all of
//! them. Every [`PUBLISH_EVERY`] it NOTIFYs what each attempt added since its last
//! publish (one statement, one commit, whatever the number of attempts); every
//! [`SNAPSHOT_EVERY`] it stores the text so far of the attempts whose text changed
//! (one statement); when an attempt ends its remaining text is published at once and
//! its row deleted. So PostgreSQL pays per replica and tick, not per token or per
//! attempt: at most 20 notifying commits and 4 unlogged upserts a second per replica,
//! each covering all its streams.
//!
//! Nothing here is durable and nothing is retried: a failed write is logged and its
//! deltas are dropped (observers fill gaps from the next stored text, and the task's
//! result holds the whole answer).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::{oneshot, Notify};
use tokio::time::Instant;
use uuid::Uuid;

use crate::store::{self, live_output};
use crate::task::live::{self, PUBLISH_EVERY, SNAPSHOT_EVERY};

/// The longest an ending attempt waits for its last text to be published.
const FINISH_WAIT: Duration = Duration::from_secs(2);

/// A replica's live output publisher; cloning shares it.
#[derive(Clone)]
pub struct LiveOutput {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    attempts: Mutex<HashMap<(Uuid, i32), Buffer>>,
    /// An attempt ended: publish now rather than at the next tick (shared with the
    /// loop, which holds no strong reference to the rest).
    flush_now: Arc<Notify>,
}

/// One running attempt's text.
#[derive(Default)]
struct Buffer {
    text: String,
    /// Bytes of `text` already published, and their characters.
    published: usize,
    published_chars: u64,
    /// Whether `text` changed since it was last stored, and whether it ever was.
    dirty: bool,
    stored: bool,
    /// Set when the attempt ended: who waits for its last publish.
    ended: Option<Vec<oneshot::Sender<()>>>,
}

/// What one round writes.
#[derive(Default)]
struct Round {
    payloads: Vec<String>,
    store: Vec<(Uuid, i32, String)>,
    forget: Vec<(Uuid, i32)>,
    waiters: Vec<oneshot::Sender<()>>,
}

impl LiveOutput {
    /// Starts the publishing loop on the current runtime, writing on `pool`; it ends
    /// when every handle is dropped.
    pub fn start(pool: store::Pool) -> Self {
        let inner = Arc::new(Inner::default());
        let flush_now = inner.flush_now.clone();
        tokio::spawn(run(Arc::downgrade(&inner), flush_now, pool));
        LiveOutput { inner }
    }

    /// A writer for `attempt` of `task`.
    pub fn open(&self, task: Uuid, attempt: i32) -> Writer {
        self.lock().insert((task, attempt), Buffer::default());
        Writer {
            output: self.clone(),
            key: (task, attempt),
            finished: false,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(Uuid, i32), Buffer>> {
        self.inner
            .attempts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Marks the attempt ended, returning what resolves once its last text is out.
    fn end(&self, key: (Uuid, i32)) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        if let Some(buffer) = self.lock().get_mut(&key) {
            buffer.ended.get_or_insert_with(Vec::new).push(tx);
        }
        self.inner.flush_now.notify_one();
        rx
    }
}

/// One attempt's handle: text pushed here is published; dropping it (or
/// [`Writer::finish`]) ends the attempt's live output.
pub struct Writer {
    output: LiveOutput,
    key: (Uuid, i32),
    finished: bool,
}

impl Writer {
    /// Appends `text` to the attempt's output.
    pub fn push(&self, text: &str) {
        if text.is_empty() {
            return;
        }
        if let Some(buffer) = self.output.lock().get_mut(&self.key) {
            buffer.text.push_str(text);
            buffer.dirty = true;
        }
    }

    /// Ends the attempt's live output and waits (briefly) until its last text is
    /// published: called before the attempt's result is written, so an observer hears
    /// all of the text before the terminal event.
    pub async fn finish(mut self) {
        self.finished = true;
        let published = self.output.end(self.key);
        let _ = tokio::time::timeout(FINISH_WAIT, published).await;
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if !self.finished {
            drop(self.output.end(self.key));
        }
    }
}

/// The loop: a round every [`PUBLISH_EVERY`], or at once when an attempt ends.
async fn run(inner: Weak<Inner>, flush_now: Arc<Notify>, pool: store::Pool) {
    let mut tick = tokio::time::interval(PUBLISH_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_store = Instant::now();
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = flush_now.notified() => {}
        }
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let store_due = last_store.elapsed() >= SNAPSHOT_EVERY;
        let round = {
            let mut attempts = inner.attempts.lock().unwrap_or_else(|e| e.into_inner());
            take_round(&mut attempts, store_due)
        };
        drop(inner);
        if store_due {
            last_store = Instant::now();
        }
        match write(&pool, &round).await {
            Ok(_) => {}
            Err(error) if super::ServiceError::unavailable(&error) => {
                crate::telemetry::outage::failed("publish live output", &format!("{error:#}"), None)
            }
            Err(error) => tracing::warn!(error = %format!("{error:#}"), "publish live output"),
        }
        for waiter in round.waiters {
            let _ = waiter.send(());
        }
    }
}

/// What is due now: every attempt's unpublished text, the text so far of changed
/// attempts when `store_due`, and the ended attempts (removed here).
fn take_round(attempts: &mut HashMap<(Uuid, i32), Buffer>, store_due: bool) -> Round {
    let mut round = Round::default();
    attempts.retain(|&(task, attempt), buffer| {
        let new = &buffer.text[buffer.published..];
        if !new.is_empty() {
            for delta in live::split(task, attempt, buffer.published_chars, new) {
                round
                    .payloads
                    .push(serde_json::to_string(&delta).expect("a delta serializes"));
            }
            buffer.published_chars += live::chars(new);
            buffer.published = buffer.text.len();
        }
        if let Some(waiters) = buffer.ended.take() {
            round.waiters.extend(waiters);
            if buffer.stored {
                round.forget.push((task, attempt));
            }
            return false;
        }
        if store_due && buffer.dirty {
            round.store.push((task, attempt, buffer.text.clone()));
            buffer.dirty = false;
            buffer.stored = true;
        }
        true
    });
    round
}

async fn write(pool: &store::Pool, round: &Round) -> anyhow::Result<()> {
    if round.payloads.is_empty() && round.store.is_empty() && round.forget.is_empty() {
        return Ok(());
    }
    let client = pool.get().await?;
    let client = store::client(&client);
    if !round.payloads.is_empty() {
        live_output::publish(client, &round.payloads).await?;
    }
    if !round.store.is_empty() {
        live_output::store(client, &round.store).await?;
    }
    if !round.forget.is_empty() {
        live_output::forget(client, &round.forget).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_publishes_new_text_stores_changed_text_and_drops_ended_attempts() {
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let mut attempts = HashMap::new();
        attempts.insert(
            (a, 1),
            Buffer {
                text: "héllo".into(),
                dirty: true,
                ..Default::default()
            },
        );
        let round = take_round(&mut attempts, false);
        assert_eq!(round.payloads.len(), 1);
        assert!(round.store.is_empty());
        let buffer = attempts.get_mut(&(a, 1)).unwrap();
        buffer.text.push_str(" world");
        let round = take_round(&mut attempts, true);
        let delta: live::Delta = serde_json::from_str(&round.payloads[0]).unwrap();
        assert_eq!((delta.offset, delta.text.as_str()), (5, " world"));
        assert_eq!(round.store, vec![(a, 1, "héllo world".to_owned())]);
        // Nothing new: nothing to write.
        let round = take_round(&mut attempts, true);
        assert!(round.payloads.is_empty() && round.store.is_empty());
        // Ended: published, forgotten (it was stored), removed; one never stored is
        // not deleted.
        attempts.insert((b, 2), Buffer::default());
        for buffer in attempts.values_mut() {
            buffer.ended = Some(Vec::new());
        }
        let round = take_round(&mut attempts, false);
        assert_eq!(round.forget, vec![(a, 1)]);
        assert!(attempts.is_empty());
    }
}
