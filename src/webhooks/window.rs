//! How many notifications a replica claims ahead per endpoint. Pure: the deliverer
//! passes in what it saw of the endpoint.
//!
//! Every round (a claim, one read of the tasks, one settle) costs the database about as
//! much whether it carries a few rows or many, so a fast receiver should get big rounds.
//! But a claimed row waits in the replica for one of its endpoint's slots, and it must be
//! sent before its claim runs out, or another replica sends it too. So the window is as many
//! rounds of the endpoint's slots as its recent pace allows within the claim (at least
//! two, at most [`MAX_ROUNDS`]), and a row whose turn comes too late anyway (the
//! receiver slowed down after the claim) is not sent but released, due again at once.

use std::time::Duration;

/// The fewest rounds of an endpoint's slots claimed ahead: one in flight, one waiting.
pub const MIN_ROUNDS: usize = 2;

/// The most rounds claimed ahead, however fast the receiver: 256 rows with the default
/// 8 slots, so a fast receiver's rounds are bounded by what a replica holds
/// (`--webhook-concurrency`), not by its window: a lower bound would leave a drain to
/// one endpoint claiming far more often than it needs to.
pub const MAX_ROUNDS: usize = 32;

/// An endpoint's window of claimed rows, from the deliverer's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// Attempts in flight at once per endpoint.
    pub slots: usize,
    /// How long a claim holds.
    pub claim_for: Duration,
    /// How long one attempt may take.
    pub timeout: Duration,
}

impl Window {
    /// Rows an endpoint may hold claimed, given `pace` (its recent slow attempt; `None`
    /// before any): [`MIN_ROUNDS`] of its slots, or as many more rounds as half the
    /// time a claim leaves for waiting (the claim less one timeout) fits at that pace.
    pub fn rows(&self, pace: Option<Duration>) -> usize {
        let slots = self.slots.max(1);
        let Some(pace) = pace else {
            return slots * MIN_ROUNDS;
        };
        let budget = self.spare().as_secs_f64() / 2.0;
        let rounds = budget / pace.as_secs_f64().max(1e-3);
        slots * (rounds.floor() as usize).clamp(MIN_ROUNDS, MAX_ROUNDS)
    }

    /// Whether an endpoint holding `held` rows has filled its window: a batch complete
    /// then claims none of its rows for this replica (`handoff`).
    pub fn full(&self, held: usize, pace: Option<Duration>) -> bool {
        held >= self.rows(pace)
    }

    /// Whether a row claimed `waited` ago may still start: its attempt, timeout
    /// included, ends with a quarter of what the claim leaves after a timeout to spare,
    /// for the outcome to be written (at the round's end) before the claim runs out.
    pub fn in_time(&self, waited: Duration) -> bool {
        let spare = self.spare();
        waited <= spare - spare / 4
    }

    /// What a claim leaves after one attempt's timeout: the time its rows may wait.
    fn spare(&self) -> Duration {
        self.claim_for.saturating_sub(self.timeout)
    }
}

/// An endpoint's recent slow attempt: it rises at once to a slower attempt and falls
/// back a tenth of the way per faster one, so one quick answer after a slow spell does
/// not open the window wide.
pub fn pace(previous: Option<Duration>, attempt: Duration) -> Duration {
    match previous {
        Some(slow) if attempt < slow => slow.mul_f64(0.9) + attempt.mul_f64(0.1),
        _ => attempt,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULTS: Window = Window {
        slots: 8,
        claim_for: Duration::from_secs(60),
        timeout: Duration::from_secs(15),
    };

    #[test]
    fn an_endpoint_not_yet_seen_gets_two_rounds() {
        assert_eq!(DEFAULTS.rows(None), 16);
    }

    #[test]
    fn a_fast_receiver_gets_the_most_rounds() {
        assert_eq!(DEFAULTS.rows(Some(Duration::from_millis(2))), 256);
        assert_eq!(DEFAULTS.rows(Some(Duration::ZERO)), 256);
    }

    #[test]
    fn the_window_shrinks_with_the_pace_so_its_rows_fit_in_the_claim() {
        // 22.5 s of the 45 s a claim leaves for waiting: 7 rounds of 3 s, 2 of 10 s.
        assert_eq!(DEFAULTS.rows(Some(Duration::from_secs(3))), 56);
        assert_eq!(DEFAULTS.rows(Some(Duration::from_secs(10))), 16);
        for pace in [1, 3, 5, 7, 11, 15] {
            let pace = Duration::from_secs(pace);
            let rounds = DEFAULTS.rows(Some(pace)) / DEFAULTS.slots;
            assert!(
                rounds == MIN_ROUNDS
                    || pace * rounds as u32 + DEFAULTS.timeout <= DEFAULTS.claim_for,
                "{pace:?}: {rounds} rounds"
            );
        }
    }

    #[test]
    fn a_timeout_as_long_as_the_claim_leaves_the_minimum() {
        let tight = Window {
            timeout: Duration::from_secs(60),
            ..DEFAULTS
        };
        assert_eq!(tight.rows(Some(Duration::from_millis(1))), 16);
    }

    #[test]
    fn an_endpoint_is_full_at_its_window() {
        assert!(!DEFAULTS.full(15, None));
        assert!(DEFAULTS.full(16, None));
        assert!(!DEFAULTS.full(55, Some(Duration::from_secs(3))));
        assert!(DEFAULTS.full(56, Some(Duration::from_secs(3))));
    }

    #[test]
    fn a_row_may_start_while_its_attempt_ends_well_within_the_claim() {
        // 60 s claim, 15 s timeout: 45 s to spare, a quarter of it kept for the record.
        assert!(DEFAULTS.in_time(Duration::ZERO));
        assert!(DEFAULTS.in_time(Duration::from_millis(33_750)));
        assert!(!DEFAULTS.in_time(Duration::from_millis(33_751)));
        let tight = Window {
            timeout: Duration::from_secs(60),
            ..DEFAULTS
        };
        assert!(
            tight.in_time(Duration::ZERO),
            "refused at start, never released"
        );
    }

    #[test]
    fn the_pace_rises_at_once_and_falls_slowly() {
        let slow = pace(None, Duration::from_millis(100));
        assert_eq!(slow, Duration::from_millis(100));
        assert_eq!(
            pace(Some(slow), Duration::from_secs(2)),
            Duration::from_secs(2)
        );
        let eased = pace(Some(Duration::from_secs(2)), Duration::from_millis(100));
        assert_eq!(eased, Duration::from_millis(1810));
    }
}
