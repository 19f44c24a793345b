//! Wake-ups at moments known in advance. A retry settled here becomes claimable when
//! its backoff ends, a moment no statement marks, so this replica wakes the loops then
//! instead of leaving the task to the idle polls (which the replicas share: an idle
//! cluster polls about once per poll interval, whatever its size). The moments are
//! kept in memory only, rounded up to [`GRAIN`] so that retries ending together wake
//! once, and at most [`MOST`] of them: a moment lost with its replica, or past the
//! bound, is still found by a poll.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Moments closer than this share one wake-up.
pub const GRAIN: Duration = Duration::from_millis(10);

/// The most moments kept; later ones beyond it are left to the polls.
pub const MOST: usize = 4096;

/// The moments to wake at, earliest first.
pub struct Due {
    origin: Instant,
    moments: Mutex<BTreeSet<Instant>>,
    sooner: Notify,
}

impl Default for Due {
    fn default() -> Self {
        Due {
            origin: Instant::now(),
            moments: Mutex::default(),
            sooner: Notify::new(),
        }
    }
}

impl Due {
    /// Adds the moment `delay` from now, rounded up to the grain.
    pub fn after(&self, delay: Duration) {
        let at = self.rounded(Instant::now() + delay);
        let mut moments = self.moments.lock().unwrap_or_else(|e| e.into_inner());
        if moments.len() >= MOST {
            match moments.last() {
                Some(&last) if last > at => {
                    moments.remove(&last);
                }
                _ => return,
            }
        }
        let first = moments.first().is_none_or(|&first| at < first);
        moments.insert(at);
        drop(moments);
        if first {
            self.sooner.notify_one();
        }
    }

    /// Calls `wake` at each moment (once for moments already past), until `shutdown`.
    pub async fn run(&self, wake: impl Fn(), shutdown: CancellationToken) {
        loop {
            let next = self.first();
            let until = async {
                match next {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = until => {
                    if self.take_past() {
                        wake();
                    }
                }
                _ = self.sooner.notified() => {}
                _ = shutdown.cancelled() => return,
            }
        }
    }

    fn first(&self) -> Option<Instant> {
        let moments = self.moments.lock().unwrap_or_else(|e| e.into_inner());
        moments.first().copied()
    }

    /// Removes the moments now past; whether there were any.
    fn take_past(&self) -> bool {
        let now = Instant::now();
        let mut moments = self.moments.lock().unwrap_or_else(|e| e.into_inner());
        let later = moments.split_off(&(now + Duration::from_nanos(1)));
        let past = !moments.is_empty();
        *moments = later;
        past
    }

    fn rounded(&self, at: Instant) -> Instant {
        let grain = GRAIN.as_nanos();
        let since = at.saturating_duration_since(self.origin).as_nanos();
        let grains = since.div_ceil(grain);
        let nanos = u64::try_from(grains * grain).unwrap_or(u64::MAX);
        self.origin + Duration::from_nanos(nanos)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.moments.lock().unwrap().len()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;

    /// Runs `due` in the background, counting its wakes.
    fn running(due: &Arc<Due>) -> (Arc<AtomicUsize>, CancellationToken) {
        let wakes = Arc::new(AtomicUsize::new(0));
        let shutdown = CancellationToken::new();
        let (due, counted, stop) = (due.clone(), wakes.clone(), shutdown.clone());
        tokio::spawn(async move {
            let wake = || {
                counted.fetch_add(1, Ordering::SeqCst);
            };
            due.run(wake, stop).await
        });
        (wakes, shutdown)
    }

    #[tokio::test(start_paused = true)]
    async fn wakes_once_its_moment_has_come_and_not_before() {
        let due = Arc::new(Due::default());
        let (wakes, shutdown) = running(&due);
        due.after(Duration::from_secs(2));
        tokio::time::sleep(Duration::from_millis(1_990)).await;
        assert_eq!(wakes.load(Ordering::SeqCst), 0);
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert_eq!(wakes.load(Ordering::SeqCst), 1);
        assert_eq!(due.len(), 0);
        shutdown.cancel();
    }

    #[tokio::test(start_paused = true)]
    async fn a_sooner_moment_added_later_is_not_kept_waiting_behind_the_first() {
        let due = Arc::new(Due::default());
        let (wakes, shutdown) = running(&due);
        due.after(Duration::from_secs(60));
        tokio::task::yield_now().await;
        due.after(Duration::from_secs(1));
        tokio::time::sleep(Duration::from_millis(1_100)).await;
        assert_eq!(wakes.load(Ordering::SeqCst), 1);
        assert_eq!(due.len(), 1, "the later moment is still kept");
        shutdown.cancel();
    }

    #[tokio::test(start_paused = true)]
    async fn moments_within_a_grain_share_one_wake() {
        let due = Due::default();
        due.after(Duration::from_millis(101));
        due.after(Duration::from_millis(103));
        due.after(Duration::from_millis(109));
        assert_eq!(due.len(), 1);
        due.after(Duration::from_millis(110));
        assert_eq!(due.len(), 1, "a moment on the grain is its own rounding");
        due.after(Duration::from_millis(111));
        assert_eq!(due.len(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn past_the_bound_the_latest_moments_give_way() {
        let due = Due::default();
        for n in 0..MOST as u64 {
            due.after(Duration::from_secs(n + 1));
        }
        due.after(Duration::from_secs(MOST as u64 + 10));
        assert_eq!(due.len(), MOST, "a later moment is left to the polls");
        due.after(Duration::from_millis(500));
        assert_eq!(due.len(), MOST);
        assert_eq!(
            due.first(),
            Some(due.rounded(Instant::now() + Duration::from_millis(500))),
            "a sooner one takes the latest's place"
        );
    }
}
