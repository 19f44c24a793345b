//! Where a sweep's next pass (or the deliverer's next claim) starts reading its index.
//! Under a snapshot held open (a long `pg_dump`, a forgotten transaction) an index
//! keeps an entry for every row deleted or updated since, and a pass that reads it from
//! the start steps over all of them, every pass; a pass that starts where the passes
//! before it got to steps over those of one pass. What is behind that point and still
//! due (written late, by a transaction that began earlier) waits for the next pass from
//! the start, every [`FULL_PASS_EVERY`].

use std::sync::Mutex;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

/// How often a pass starts from the start of the index all the same: a task released
/// before the latest one pruned (released while it ran, then finished; released in a
/// transaction that began earlier), a notification written before the latest one
/// pruned and finished after it (its retries), a lease that expired before the last
/// sweep but was written after it (by a transaction open longer than the lease), a
/// notification written with a due time behind the deliverer's start (by a transaction
/// that began more than `CLOCK_MARGIN` before its claim), waits at most this long for
/// its pass.
pub const FULL_PASS_EVERY: Duration = Duration::from_secs(60);

/// How much earlier than the database's clock at its last sweep a sweep keyed on time
/// starts (the rescuer, the attempt- and queue-deadline sweeps, the deliverer's claim):
/// a row written with a key a little behind that clock (a lease set to end now, by a
/// transaction that began a moment before that sweep and committed after it) is still
/// ahead of the start. Under a held snapshot a sweep then steps over the dead entries
/// of this long, not those of the whole hold.
const CLOCK_MARGIN: Duration = Duration::from_secs(5);

/// Where the next pass starts: at the greatest key the passes have got to (a task's
/// `released_at`, a notification's id, the database's clock at a sweep), except for a
/// pass from the start every [`FULL_PASS_EVERY`] (and the first).
#[derive(Debug)]
pub struct Start<T>(Mutex<Reached<T>>);

#[derive(Debug)]
struct Reached<T> {
    at: Option<T>,
    full_pass: Option<Instant>,
}

impl<T> Default for Start<T> {
    fn default() -> Self {
        Start(Mutex::new(Reached {
            at: None,
            full_pass: None,
        }))
    }
}

impl<T: Ord + Copy> Start<T> {
    /// The least key of the pass starting at `now`; `None` from the start.
    pub fn next(&self, now: Instant) -> Option<T> {
        let mut reached = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match reached.full_pass {
            Some(at) if now.saturating_duration_since(at) < FULL_PASS_EVERY => reached.at,
            _ => {
                reached.full_pass = Some(now);
                None
            }
        }
    }

    /// Where the next pass that is not a full one starts (`None`: none has been kept).
    pub fn at(&self) -> Option<T> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).at
    }

    /// A pass got to `at` (deleted rows up to it, or swept everything due before it).
    pub fn reached(&self, at: Option<T>) {
        let mut reached = self.0.lock().unwrap_or_else(|e| e.into_inner());
        reached.at = reached.at.max(at);
    }
}

impl Start<DateTime<Utc>> {
    /// A sweep keyed on time that began at the database's `clock` found `found` rows of
    /// at most `limit`: one that came back short found everything due, and the next
    /// starts `CLOCK_MARGIN` before its clock; a full one leaves the start where it was.
    pub fn swept(&self, clock: DateTime<Utc>, found: usize, limit: i64) {
        if (found as i64) < limit {
            self.reached(Some(clock - CLOCK_MARGIN));
        }
    }

    /// A pass that began at the database's `clock` saw rows still to do from `earliest`
    /// on (`None`: none): the next starts at the earlier of that and `CLOCK_MARGIN`
    /// before the clock. Set, not raised: a pass from the start may find a row behind
    /// where the start was (written late), and the start must not pass it while it
    /// waits.
    pub fn pending(&self, clock: DateTime<Utc>, earliest: Option<DateTime<Utc>>) {
        let at = (clock - CLOCK_MARGIN).min(earliest.unwrap_or(clock));
        let mut reached = self.0.lock().unwrap_or_else(|e| e.into_inner());
        reached.at = Some(at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_start_where_the_last_got_to_and_from_the_start_every_so_often() {
        let start = Start::<DateTime<Utc>>::default();
        let t0 = Instant::now();
        let day = |d: i64| Some(DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::days(d));
        assert_eq!(start.next(t0), None, "the first pass is a full one");
        start.reached(day(10));
        assert_eq!(start.next(t0 + Duration::from_secs(1)), day(10));
        start.reached(None);
        start.reached(day(9));
        assert_eq!(
            start.next(t0 + Duration::from_secs(2)),
            day(10),
            "never back"
        );
        start.reached(day(11));
        assert_eq!(start.next(t0 + FULL_PASS_EVERY), None, "a full pass");
        assert_eq!(start.next(t0 + FULL_PASS_EVERY), day(11));
    }

    #[test]
    fn a_sweep_short_of_its_limit_moves_the_start_to_a_margin_before_its_clock() {
        let start = Start::<DateTime<Utc>>::default();
        let t0 = Instant::now();
        let clock = DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::days(10);
        assert_eq!(start.next(t0), None);
        start.swept(clock, 100, 100);
        assert_eq!(start.next(t0), None, "a full sweep leaves the start");
        start.swept(clock, 99, 100);
        assert_eq!(start.next(t0), Some(clock - CLOCK_MARGIN));
    }

    #[test]
    fn a_start_kept_at_what_is_pending_never_passes_it_and_may_go_back() {
        let start = Start::<DateTime<Utc>>::default();
        let t0 = Instant::now();
        let clock = DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::days(10);
        let hour = chrono::Duration::hours(1);
        assert_eq!(start.next(t0), None);
        start.pending(clock, None);
        assert_eq!(
            start.next(t0),
            Some(clock - CLOCK_MARGIN),
            "nothing pending"
        );
        start.pending(clock, Some(clock + hour));
        assert_eq!(
            start.next(t0),
            Some(clock - CLOCK_MARGIN),
            "a row due later does not move it past the margin"
        );
        start.pending(clock, Some(clock - hour));
        assert_eq!(
            start.next(t0),
            Some(clock - hour),
            "back to a row found behind"
        );
    }
}
