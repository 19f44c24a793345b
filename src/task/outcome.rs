//! How an attempt ended, as its row in `task_attempts` records it (`outcome`): running,
//! succeeded, retry, fallback, failed, cancelled, lost or timed out. The decision that
//! ends an attempt is `settlement`'s; this is only its name for the attempt's row.

use super::state::TaskState;

/// How an attempt ended, as `task_attempts.outcome` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Running,
    Succeeded,
    Retry,
    Fallback,
    Failed,
    Cancelled,
    /// The lease expired, the replica went away, or the lease was handed back.
    Lost,
    TimedOut,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Running => "running",
            Outcome::Succeeded => "succeeded",
            Outcome::Retry => "retry",
            Outcome::Fallback => "fallback",
            Outcome::Failed => "failed",
            Outcome::Cancelled => "cancelled",
            Outcome::Lost => "lost",
            Outcome::TimedOut => "timed_out",
        }
    }
}

impl Outcome {
    /// The outcome of an attempt a worker's report ended, leaving the task in `state`;
    /// `timed_out` when the report was a timeout (or the server's deadline overrode it).
    /// A cancel requested meanwhile wins: the attempt ends `cancelled`.
    pub fn of_settlement(timed_out: bool, state: TaskState) -> Outcome {
        match state {
            TaskState::Cancelled => Outcome::Cancelled,
            _ if timed_out => Outcome::TimedOut,
            TaskState::Succeeded => Outcome::Succeeded,
            TaskState::WaitingForRetry => Outcome::Retry,
            TaskState::WaitingForExternalFallback => Outcome::Fallback,
            // Failed; a settlement leads nowhere else (task::settlement decides).
            _ => Outcome::Failed,
        }
    }

    /// The outcome named `s`, as stored.
    pub fn parse(s: &str) -> Option<Outcome> {
        ALL.into_iter().find(|o| o.as_str() == s)
    }
}

const ALL: [Outcome; 8] = [
    Outcome::Running,
    Outcome::Succeeded,
    Outcome::Retry,
    Outcome::Fallback,
    Outcome::Failed,
    Outcome::Cancelled,
    Outcome::Lost,
    Outcome::TimedOut,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_follow_the_settled_state() {
        use TaskState::*;
        assert_eq!(Outcome::of_settlement(false, Succeeded), Outcome::Succeeded);
        assert_eq!(
            Outcome::of_settlement(false, WaitingForRetry),
            Outcome::Retry
        );
        assert_eq!(
            Outcome::of_settlement(false, WaitingForExternalFallback),
            Outcome::Fallback
        );
        assert_eq!(Outcome::of_settlement(false, Failed), Outcome::Failed);
        assert_eq!(Outcome::of_settlement(true, Failed), Outcome::TimedOut);
        assert_eq!(
            Outcome::of_settlement(true, WaitingForRetry),
            Outcome::TimedOut
        );
        // A requested cancel wins over the timeout that ended the attempt.
        assert_eq!(Outcome::of_settlement(true, Cancelled), Outcome::Cancelled);
    }

    #[test]
    fn outcomes_round_trip_their_names() {
        for outcome in ALL {
            assert_eq!(Outcome::parse(outcome.as_str()), Some(outcome));
        }
        assert_eq!(Outcome::parse("exploded"), None);
    }
}
