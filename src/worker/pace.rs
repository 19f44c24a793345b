//! The claim loop's pace: the least time between the starts of two claims of a loop
//! woken from idle.
//!
//! Under a steady stream of submits every wake-up would otherwise cost a claim statement
//! (and then a settlement) for the one or two tasks that woke it. Within the pace they
//! share one. The pace follows the database: it is a few times the time a claim took to
//! come back (smoothed), between a floor and a ceiling.
//!
//! - On a database that answers at once, the floor holds: under a trickle a task waits
//!   at most the floor longer to be picked up, and a loop idle longer than the pace
//!   claims at once, so pickup latency with idle workers does not change.
//! - On a database that is busy (every core taken, claims queued behind submits and
//!   settles), the claims come back slowly, the pace lengthens, and the same tasks are
//!   claimed by fewer, larger statements. Each statement's fixed cost (executor
//!   start-up, the table's checks and triggers) is then paid by more tasks, which is
//!   CPU the busy database gets back; a claim of `n` tasks costs far less than `n`
//!   claims of one.
//!
//! Between the floor and the ceiling, a loop under a steady stream thus spends about a
//! `1 / FACTOR` share of its time waiting on claims (the pace runs from the start of
//! one claim to the start of the next). The round trip is timed in the replica, so it
//! also holds the wait for a pooled connection, the runtime's scheduling and, for a
//! loop that takes fallbacks, their statement: all of it is the cost of a claim when
//! the box is busy. A full claim of a backlog counts too. A failed claim does not (a
//! dropped connection's timeout says nothing of the database's pace), and no single
//! claim moves the pace by more than half the ceiling.

use std::time::Duration;

/// The pace on a database that answers fast. A replica's loops share it (they take
/// turns, `service::wakeup`): under a steady stream of single submits a replica claims
/// at most this often, so at a few hundred tasks a second a claim and its settle carry a
/// few tasks each instead of one (at 5 ms they carried one: the claim statement, its
/// commit and the settle's were most of what such a task cost PostgreSQL).
pub const FLOOR: Duration = Duration::from_millis(10);
/// The longest pace, whatever the database's answer time: the most a busy loop adds to
/// a task's pickup.
pub const CEILING: Duration = Duration::from_millis(20);
/// The pace is this many times the smoothed claim round trip.
pub const FACTOR: u32 = 4;
/// Weight of the newest round trip in the smoothed one (1 in `SMOOTHING`): one slow
/// claim does not stretch the pace, a database that stays slow does.
const SMOOTHING: u32 = 4;

/// The smoothed claim round trip of one loop, and the pace it gives.
#[derive(Debug, Clone, Default)]
pub struct Pace {
    /// Starts at zero, so a loop's first claim (on a new connection, its plans not yet
    /// cached) moves the pace by a share like any other.
    round_trip: Duration,
}

impl Pace {
    /// Takes in how long a claim took to come back. A sample counts at most as twice the
    /// round trip that gives the ceiling: one claim that waited on a lock moves the pace
    /// by at most half the ceiling (a `1 / SMOOTHING` share of `FACTOR` times the cap),
    /// while a database that stays slow still takes it all the way.
    pub fn observe(&mut self, round_trip: Duration) {
        let sample = round_trip.min(CEILING * 2 / FACTOR);
        self.round_trip = (self.round_trip * (SMOOTHING - 1) + sample) / SMOOTHING;
    }

    /// The least time between the starts of two claims of a loop woken from idle.
    pub fn interval(&self) -> Duration {
        self.round_trip.saturating_mul(FACTOR).clamp(FLOOR, CEILING)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Observes `round_trip` enough times for the smoothing to settle on it.
    fn settle(pace: &mut Pace, round_trip: Duration) {
        for _ in 0..50 {
            pace.observe(round_trip);
        }
    }

    /// `pace` is `expected`, or a few microseconds under it: smoothing towards a value
    /// in whole nanoseconds rounds down.
    fn about(pace: &Pace, expected: Duration) {
        let interval = pace.interval();
        let under = expected - Duration::from_micros(10);
        assert!(
            interval > under && interval <= expected,
            "{interval:?} for {expected:?}"
        );
    }

    #[test]
    fn a_fast_database_keeps_the_floor() {
        let mut pace = Pace::default();
        assert_eq!(pace.interval(), FLOOR);
        settle(&mut pace, Duration::from_micros(800));
        assert_eq!(pace.interval(), FLOOR);
    }

    #[test]
    fn a_slow_database_lengthens_the_pace_up_to_the_ceiling() {
        let mut pace = Pace::default();
        settle(&mut pace, ms(3));
        about(&pace, ms(12));
        settle(&mut pace, ms(40));
        assert_eq!(pace.interval(), CEILING);
    }

    #[test]
    fn one_slow_claim_moves_the_pace_by_a_share() {
        let mut pace = Pace::default();
        settle(&mut pace, ms(2));
        pace.observe(ms(8));
        // (3 × 2 + 8) / 4 = 3.5 ms smoothed: 14 ms.
        about(&pace, ms(14));
        settle(&mut pace, ms(1));
        assert_eq!(pace.interval(), FLOOR);
    }

    #[test]
    fn a_claim_that_waited_seconds_moves_the_pace_by_at_most_half_the_ceiling() {
        let mut pace = Pace::default();
        settle(&mut pace, ms(1));
        pace.observe(Duration::from_secs(5));
        // Counted as 10 ms: (3 × 1 + 10) / 4 = 3.25 ms smoothed, 13 ms, not the ceiling.
        about(&pace, ms(13));
        // A loop's first claim, slow on a new connection, moves it by a share too.
        let mut first = Pace::default();
        first.observe(Duration::from_secs(5));
        assert_eq!(first.interval(), ms(10));
    }
}
