//! The one way a test waits for something another task, process or replica does:
//! [`eventually`] polls a probe with a short backoff until it holds, and fails the
//! test, naming what it waited for, once a bound passes. Bounds are generous (they
//! only decide how long a broken build takes to fail, never whether a slow but correct
//! one passes), so they hold on a loaded two-core machine.

use std::fmt::Debug;
use std::future::Future;
use std::time::Duration;

/// First pause between two probes; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
/// Longest pause between two probes.
const MAX_BACKOFF: Duration = Duration::from_millis(200);

/// What a probe answers: whether the awaited thing holds, and what it yields then.
pub trait Probe {
    /// What [`eventually`] returns once the probe holds.
    type Value;
    /// `Ok` once it holds; otherwise what was seen instead, for the failure message.
    fn check(self) -> Result<Self::Value, String>;
}

impl Probe for bool {
    type Value = ();
    fn check(self) -> Result<(), String> {
        if self {
            Ok(())
        } else {
            Err("false".into())
        }
    }
}

impl<T> Probe for Option<T> {
    type Value = T;
    fn check(self) -> Result<T, String> {
        self.ok_or_else(|| "None".into())
    }
}

/// `Err(seen)`: not yet, and `seen` goes into the failure message.
impl<T, E: Debug> Probe for Result<T, E> {
    type Value = T;
    fn check(self) -> Result<T, String> {
        self.map_err(|seen| format!("{seen:?}"))
    }
}

/// Polls `probe` until it holds and returns what it yielded; panics with `what` and the
/// last thing seen once `timeout` passes (a probe still running then is abandoned).
pub async fn eventually<F, Fut>(
    timeout: Duration,
    what: &str,
    mut probe: F,
) -> <Fut::Output as Probe>::Value
where
    F: FnMut() -> Fut,
    Fut: Future,
    Fut::Output: Probe,
{
    let deadline = tokio::time::Instant::now() + timeout;
    let mut backoff = FIRST_BACKOFF;
    let mut seen = String::from("no answer");
    loop {
        match tokio::time::timeout_at(deadline, probe()).await {
            Ok(answer) => match answer.check() {
                Ok(value) => return value,
                Err(last) => seen = last,
            },
            Err(_) => seen = format!("a probe still running ({seen} before)"),
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            panic!("waited {timeout:?} for {what}; last saw {seen}");
        }
        tokio::time::sleep(backoff.min(deadline - now)).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}
