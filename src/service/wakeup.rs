//! Wake-ups: how idle claim loops learn of new work. A local submit wakes this replica's
//! loops directly; other replicas hear a (debounced) `NOTIFY`; the poll interval of each
//! loop is the fallback when notifications are lost or LISTEN is unavailable.

use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::store::WAKEUP_CHANNEL;

/// A wake-up signal shared by this replica's claim loops. Cloning shares it.
#[derive(Clone)]
pub struct Wakeup {
    generation: watch::Sender<u64>,
    notify: watch::Sender<u64>,
    /// Fallbacks settled here: the external loop that takes only fallbacks waits on
    /// this (and its poll interval) instead of every wake-up, so it costs no claim per
    /// submit. Fallbacks settled on other replicas reach it at its next poll.
    fallback: watch::Sender<u64>,
}

impl Default for Wakeup {
    fn default() -> Self {
        Wakeup {
            generation: watch::channel(0).0,
            notify: watch::channel(0).0,
            fallback: watch::channel(0).0,
        }
    }
}

impl Wakeup {
    /// Wakes this replica's loops.
    pub fn wake_local(&self) {
        self.generation.send_modify(|g| *g = g.wrapping_add(1));
    }

    /// Wakes this replica's loops and asks the notifier to tell the other replicas.
    pub fn wake_all(&self) {
        self.wake_local();
        self.notify.send_modify(|g| *g = g.wrapping_add(1));
    }

    /// Wakes this replica's fallback-only loops: a task now waits for an external route.
    pub fn wake_fallback(&self) {
        self.fallback.send_modify(|g| *g = g.wrapping_add(1));
    }

    /// A receiver a fallback-only claim loop waits on.
    pub fn subscribe_fallback(&self) -> watch::Receiver<u64> {
        self.fallback.subscribe()
    }

    /// A receiver a claim loop waits on; `changed()` never misses a wake that happened
    /// after the last `borrow_and_update()`.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// Sends one `NOTIFY` per burst of [`Wakeup::wake_all`] calls, at most one per
    /// `debounce`, until `shutdown`.
    pub async fn run_notifier(
        self,
        pool: crate::store::Pool,
        debounce: Duration,
        shutdown: CancellationToken,
    ) {
        let mut requests = self.notify.subscribe();
        loop {
            tokio::select! {
                changed = requests.changed() => if changed.is_err() { return },
                _ = shutdown.cancelled() => return,
            }
            requests.borrow_and_update();
            if let Ok(client) = pool.get().await {
                match crate::store::notify::wake_replicas_pooled(&client).await {
                    Ok(()) => crate::telemetry::outage::answered(),
                    Err(error) if crate::store::connect::gone::gone(&error).is_some() => {
                        let sqlstate = error.code().map(|code| code.code());
                        crate::telemetry::outage::failed("notify other replicas", &error, sqlstate)
                    }
                    Err(error) => tracing::warn!(%error, "notify other replicas"),
                }
            }
            tokio::time::sleep(debounce).await;
        }
    }

    /// Listens for other replicas' notifications on a dedicated connection and wakes the
    /// local loops (also whenever the LISTEN comes back: something may have been
    /// submitted meanwhile), until `shutdown`.
    pub async fn run_listener(self, database_url: String, shutdown: CancellationToken) {
        crate::store::listen::listen(
            database_url,
            WAKEUP_CHANNEL,
            "work wake-ups",
            self,
            shutdown,
        )
        .await
    }
}

impl crate::store::listen::Listener for Wakeup {
    fn listening(&mut self) {
        self.wake_local();
    }

    fn notified(&mut self, _payload: &str) {
        self.wake_local();
    }
}
