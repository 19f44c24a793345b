//! Batched heartbeats: one statement per tick keeps alive the lease of every attempt a
//! claim loop runs, instead of a statement per attempt every lease/3. Long-running work
//! (inference calls of seconds to minutes) spends most of its life heartbeating, so with
//! thousands of attempts in flight this is most of what a replica asks of PostgreSQL.
//!
//! Each attempt registers its lease and is extended every lease/3 as before; the batcher
//! wakes at the earliest due lease and takes along every lease due within half its own
//! period, so leases of similar ages share statements. Progress, phases, snapshots and
//! events still go through `Tasklane::heartbeat` (`TaskContext::report`), which extends
//! the lease too. A lease found lost (or a task gone) stops its attempt through the
//! `lost` token; cancellation requested stops it through `cancel`. A failed statement is
//! tried again within a second, well inside the two thirds of a lease left.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::service::{ClaimedTask, Lease, LeaseStatus, Tasklane};

/// Most leases one statement extends.
const MAX_BATCH: usize = 1_000;
/// Longest wait before a failed extension is tried again.
const RETRY: Duration = Duration::from_secs(1);

/// A handle on a claim loop's batcher; cloning shares it.
#[derive(Clone)]
pub struct Heartbeats {
    shared: Arc<Shared>,
}

struct Shared {
    entries: Mutex<HashMap<Uuid, Entry>>,
    changed: Notify,
}

struct Entry {
    lease_token: Uuid,
    period: Duration,
    due: Instant,
    cancel: CancellationToken,
    lost: CancellationToken,
}

/// An attempt's place in the batcher; dropping it stops the attempt's heartbeats.
pub struct Registration {
    shared: Arc<Shared>,
    id: Uuid,
}

impl Drop for Registration {
    fn drop(&mut self) {
        lock(&self.shared.entries).remove(&self.id);
    }
}

impl Heartbeats {
    /// Starts a batcher extending leases through `tasklane` until `stop`.
    pub fn start(tasklane: Tasklane, stop: CancellationToken) -> Heartbeats {
        let shared = Arc::new(Shared {
            entries: Mutex::new(HashMap::new()),
            changed: Notify::new(),
        });
        tokio::spawn(run(tasklane, shared.clone(), stop));
        Heartbeats { shared }
    }

    /// Keeps `task`'s lease alive every lease/3 until the registration is dropped;
    /// signals `cancel` when cancellation was requested and `lost` when the lease is
    /// lost or the task gone (after which the lease is no longer extended).
    pub fn register(
        &self,
        task: &ClaimedTask,
        cancel: CancellationToken,
        lost: CancellationToken,
    ) -> Registration {
        let period = Duration::from_secs(task.lease_seconds.max(1) as u64) / 3;
        let entry = Entry {
            lease_token: task.lease_token,
            period,
            due: Instant::now() + period,
            cancel,
            lost,
        };
        lock(&self.shared.entries).insert(task.id, entry);
        self.shared.changed.notify_one();
        Registration {
            shared: self.shared.clone(),
            id: task.id,
        }
    }
}

fn lock(entries: &Mutex<HashMap<Uuid, Entry>>) -> std::sync::MutexGuard<'_, HashMap<Uuid, Entry>> {
    // Entries are whole values whatever a panicking holder did.
    entries.lock().unwrap_or_else(|e| e.into_inner())
}

async fn run(tasklane: Tasklane, shared: Arc<Shared>, stop: CancellationToken) {
    loop {
        let next_due = lock(&shared.entries).values().map(|e| e.due).min();
        let woken = async {
            match next_due {
                Some(due) => tokio::time::sleep_until(due).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = woken => {}
            // A new registration may be due sooner; look again.
            _ = shared.changed.notified() => continue,
            _ = stop.cancelled() => return,
        }
        let sent_at = Instant::now();
        let due = due_leases(&shared, sent_at);
        for batch in due.chunks(MAX_BATCH) {
            let answer = tasklane.extend_leases(batch).await;
            apply(&shared, batch, answer, sent_at);
        }
    }
}

/// The leases due now or within half their period, oldest first.
fn due_leases(shared: &Shared, now: Instant) -> Vec<Lease> {
    let entries = lock(&shared.entries);
    let mut due: Vec<(Instant, Lease)> = entries
        .iter()
        .filter(|(_, e)| e.due <= now + e.period / 2)
        .map(|(id, e)| {
            let lease = Lease {
                id: *id,
                lease_token: e.lease_token,
            };
            (e.due, lease)
        })
        .collect();
    due.sort_unstable();
    due.into_iter().map(|(_, lease)| lease).collect()
}

/// Records a batch's answer: the next due time of each extended lease, the signals of
/// cancelled and lost ones, a quick retry after a failure.
fn apply(
    shared: &Shared,
    batch: &[Lease],
    answer: Result<Vec<LeaseStatus>, crate::service::ServiceError>,
    sent_at: Instant,
) {
    let mut entries = lock(&shared.entries);
    let statuses = match answer {
        Ok(statuses) => statuses,
        Err(error) => {
            match error.is_unavailable() {
                true => crate::telemetry::outage::failed("heartbeat", &error, error.sqlstate()),
                false => {
                    tracing::warn!(%error, sqlstate = error.sqlstate(), leases = batch.len(), "heartbeat")
                }
            }
            for lease in batch {
                if let Some(entry) = entries.get_mut(&lease.id) {
                    entry.due = Instant::now() + entry.period.min(RETRY);
                }
            }
            return;
        }
    };
    for (lease, status) in batch.iter().zip(statuses) {
        // The attempt may have ended (and another claimed the task) meanwhile.
        let Some(entry) = entries.get_mut(&lease.id) else {
            continue;
        };
        if entry.lease_token != lease.lease_token {
            continue;
        }
        match status {
            LeaseStatus::Extended { cancel_requested } => {
                if cancel_requested {
                    entry.cancel.cancel();
                }
                entry.due = sent_at + entry.period;
            }
            LeaseStatus::Lost => {
                entry.lost.cancel();
                entries.remove(&lease.id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared_with(dues: &[(u128, Duration, Duration)]) -> Shared {
        let now = Instant::now();
        let entries = dues
            .iter()
            .map(|&(n, period, in_)| {
                let entry = Entry {
                    lease_token: Uuid::from_u128(n),
                    period,
                    due: now + in_,
                    cancel: CancellationToken::new(),
                    lost: CancellationToken::new(),
                };
                (Uuid::from_u128(n), entry)
            })
            .collect();
        Shared {
            entries: Mutex::new(entries),
            changed: Notify::new(),
        }
    }

    #[tokio::test]
    async fn leases_due_within_half_their_period_ride_along() {
        let second = Duration::from_secs(1);
        let shared = shared_with(&[
            (1, 10 * second, Duration::ZERO),
            (2, 10 * second, 4 * second),
            (3, 10 * second, 6 * second),
            (4, 2 * second, 2 * second),
        ]);
        let due = due_leases(&shared, Instant::now());
        let ids: Vec<u128> = due.iter().map(|l| l.id.as_u128()).collect();
        assert_eq!(ids, vec![1, 2], "oldest first; 3 and 4 are not due yet");
    }

    #[tokio::test]
    async fn lost_leases_are_signalled_and_dropped_extended_ones_rescheduled() {
        let second = Duration::from_secs(1);
        let shared = shared_with(&[
            (1, 3 * second, Duration::ZERO),
            (2, 3 * second, Duration::ZERO),
        ]);
        let batch = due_leases(&shared, Instant::now());
        let sent_at = Instant::now();
        let statuses = batch
            .iter()
            .map(|l| match l.id.as_u128() {
                1 => LeaseStatus::Extended {
                    cancel_requested: true,
                },
                _ => LeaseStatus::Lost,
            })
            .collect();
        let (cancel_1, lost_2) = {
            let entries = lock(&shared.entries);
            (
                entries[&Uuid::from_u128(1)].cancel.clone(),
                entries[&Uuid::from_u128(2)].lost.clone(),
            )
        };
        apply(&shared, &batch, Ok(statuses), sent_at);
        assert!(cancel_1.is_cancelled());
        assert!(lost_2.is_cancelled());
        let entries = lock(&shared.entries);
        assert_eq!(entries.len(), 1, "the lost lease is no longer extended");
        assert_eq!(entries[&Uuid::from_u128(1)].due, sent_at + 3 * second);
    }
}
