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
//! Between the floor and the ceiling, a loop under a steady stream so spends about a
//! `1 / (FACTOR + 1)` share of its time waiting on claims. Every claim's round trip
//! counts, a full claim of a backlog's too: it is what the database takes to answer.

use std::time::Duration;

/// The pace on a database that answers fast.
pub const FLOOR: Duration = Duration::from_millis(5);
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
    round_trip: Option<Duration>,
}

impl Pace {
    /// Takes in how long a claim statement took to come back.
    pub fn observe(&mut self, round_trip: Duration) {
        self.round_trip = Some(match self.round_trip {
            None => round_trip,
            Some(smoothed) => (smoothed * (SMOOTHING - 1) + round_trip) / SMOOTHING,
        });
    }

    /// The least time between the starts of two claims of a loop woken from idle.
    pub fn interval(&self) -> Duration {
        let round_trip = self.round_trip.unwrap_or_default();
        round_trip.saturating_mul(FACTOR).clamp(FLOOR, CEILING)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_fast_database_keeps_the_floor() {
        let mut pace = Pace::default();
        assert_eq!(pace.interval(), FLOOR);
        for _ in 0..50 {
            pace.observe(Duration::from_micros(800));
        }
        assert_eq!(pace.interval(), FLOOR);
    }

    #[test]
    fn a_slow_database_lengthens_the_pace_up_to_the_ceiling() {
        let mut pace = Pace::default();
        pace.observe(ms(3));
        assert_eq!(pace.interval(), ms(12));
        for _ in 0..50 {
            pace.observe(ms(40));
        }
        assert_eq!(pace.interval(), CEILING);
    }

    #[test]
    fn one_slow_claim_moves_the_pace_by_a_share() {
        let mut pace = Pace::default();
        for _ in 0..50 {
            pace.observe(ms(1));
        }
        pace.observe(ms(13));
        // (3 × 1 + 13) / 4 = 4 ms smoothed: 16 ms, not the ceiling.
        assert_eq!(pace.interval(), ms(16));
        for _ in 0..50 {
            pace.observe(ms(1));
        }
        assert_eq!(pace.interval(), FLOOR);
    }
}
