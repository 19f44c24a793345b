//! What happens to a task whose worker vanished: its lease expired, the replica handed
//! it back at shutdown, or a cold start found it. [`decide`] picks a decision by state,
//! policy and attempts left; [`RestartDecision::apply`] turns it into the write, the
//! new state taken from the transition table ([`TaskState::apply`]).

use super::codes;
use super::state::{IllegalTransition, TaskState, Transition};

/// Per-task policy for a lost worker, snapshotted at submit from the task type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RestartPolicy {
    Fail,
    Retry,
    Resume,
}

impl RestartPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            RestartPolicy::Fail => "fail",
            RestartPolicy::Retry => "retry",
            RestartPolicy::Resume => "resume",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "fail" => Some(RestartPolicy::Fail),
            "retry" => Some(RestartPolicy::Retry),
            "resume" => Some(RestartPolicy::Resume),
            _ => None,
        }
    }
}

/// Why the worker is considered lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LostBecause {
    /// Its lease expired (the rescuer found it).
    LeaseExpired,
    /// Its replica is gone: a cold start found it, or the replica handed it back.
    ServerRestarted,
}

impl LostBecause {
    /// The stable code of the loss: the lost attempt's error code, and a requeued
    /// task's event's.
    pub fn code(self) -> &'static str {
        match self {
            LostBecause::LeaseExpired => codes::LEASE_EXPIRED,
            LostBecause::ServerRestarted => codes::SERVER_RESTARTED,
        }
    }
}

/// The decision for one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestartDecision {
    /// Leave the row alone.
    Keep,
    /// Claimable again now; `keep_snapshot` for `resume`. `code` says why, for the event.
    Requeue {
        keep_snapshot: bool,
        code: &'static str,
    },
    /// Failed with this code.
    Fail { code: &'static str },
    /// A cancel was requested: honour it.
    Cancel,
}

impl RestartDecision {
    /// The edge of the transition table this decision takes; `None` for [`Keep`].
    ///
    /// [`Keep`]: RestartDecision::Keep
    pub fn transition(self) -> Option<Transition> {
        match self {
            RestartDecision::Keep => None,
            RestartDecision::Requeue { .. } => Some(Transition::Requeue),
            RestartDecision::Fail { .. } => Some(Transition::Fail),
            // The worker can no longer acknowledge the cancel; its loss does.
            RestartDecision::Cancel => Some(Transition::AckCancel),
        }
    }

    /// What to write for a task in `from`: `None` to leave it alone, else the state the
    /// table gives for [`Self::transition`], the code, and whether the snapshot stays.
    pub fn apply(self, from: TaskState) -> Result<Option<Recovery>, IllegalTransition> {
        let Some(transition) = self.transition() else {
            return Ok(None);
        };
        let state = from.apply(transition)?;
        let (code, keep_snapshot) = match self {
            RestartDecision::Requeue {
                keep_snapshot,
                code,
            } => (Some(code), keep_snapshot),
            RestartDecision::Fail { code } => (Some(code), false),
            RestartDecision::Cancel | RestartDecision::Keep => (None, false),
        };
        Ok(Some(Recovery {
            state,
            code,
            keep_snapshot,
        }))
    }
}

/// The write for one recovered task (`sql/recover.sql`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recovery {
    pub state: TaskState,
    /// Why, for the task's error code and its event; `None` for an acknowledged cancel.
    pub code: Option<&'static str>,
    /// Whether the task keeps its snapshot (policy `resume`).
    pub keep_snapshot: bool,
}

/// Decides the fate of a task found without a live worker. `attempt` is the attempt that
/// was running (claims count attempts), so `retry` and `resume` give up once it reaches
/// `max_attempts`: a task that crashes its worker every time cannot loop forever.
pub fn decide(
    state: TaskState,
    policy: RestartPolicy,
    attempt: u32,
    max_attempts: u32,
    because: LostBecause,
) -> RestartDecision {
    let lost_code = because.code();
    match state {
        TaskState::Queued => match (policy, because) {
            (RestartPolicy::Fail, LostBecause::ServerRestarted) => RestartDecision::Fail {
                code: codes::SERVER_RESTARTED,
            },
            _ => RestartDecision::Keep,
        },
        TaskState::Running => match policy {
            RestartPolicy::Fail => RestartDecision::Fail {
                code: codes::SERVER_RESTARTED,
            },
            _ if attempt >= max_attempts => RestartDecision::Fail {
                code: codes::ATTEMPTS_EXHAUSTED,
            },
            RestartPolicy::Retry => RestartDecision::Requeue {
                keep_snapshot: false,
                code: lost_code,
            },
            RestartPolicy::Resume => RestartDecision::Requeue {
                keep_snapshot: true,
                code: lost_code,
            },
        },
        TaskState::Cancelling => RestartDecision::Cancel,
        TaskState::WaitingForRetry
        | TaskState::WaitingForExternalFallback
        | TaskState::Succeeded
        | TaskState::Failed
        | TaskState::Cancelled => RestartDecision::Keep,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use LostBecause::*;
    use RestartPolicy::*;

    #[test]
    fn queued_tasks_only_fail_at_a_cold_start_with_policy_fail() {
        assert_eq!(
            decide(TaskState::Queued, Fail, 0, 3, ServerRestarted),
            RestartDecision::Fail {
                code: "server_restarted"
            }
        );
        for policy in [Retry, Resume] {
            assert_eq!(
                decide(TaskState::Queued, policy, 0, 3, ServerRestarted),
                RestartDecision::Keep
            );
        }
        assert_eq!(
            decide(TaskState::Queued, Fail, 0, 3, LeaseExpired),
            RestartDecision::Keep
        );
    }

    #[test]
    fn running_tasks_follow_their_policy() {
        assert_eq!(
            decide(TaskState::Running, Fail, 1, 3, LeaseExpired),
            RestartDecision::Fail {
                code: "server_restarted"
            }
        );
        assert_eq!(
            decide(TaskState::Running, Retry, 1, 3, LeaseExpired),
            RestartDecision::Requeue {
                keep_snapshot: false,
                code: "lease_expired"
            }
        );
        assert_eq!(
            decide(TaskState::Running, Resume, 2, 3, ServerRestarted),
            RestartDecision::Requeue {
                keep_snapshot: true,
                code: "server_restarted"
            }
        );
    }

    #[test]
    fn retry_and_resume_stop_at_max_attempts() {
        for policy in [Retry, Resume] {
            assert_eq!(
                decide(TaskState::Running, policy, 3, 3, LeaseExpired),
                RestartDecision::Fail {
                    code: "attempts_exhausted"
                }
            );
        }
    }

    #[test]
    fn cancelling_tasks_are_cancelled_whatever_the_policy() {
        for policy in [Fail, Retry, Resume] {
            for because in [LeaseExpired, ServerRestarted] {
                assert_eq!(
                    decide(TaskState::Cancelling, policy, 1, 3, because),
                    RestartDecision::Cancel
                );
            }
        }
    }

    #[test]
    fn every_decision_is_an_edge_of_the_transition_table() {
        for state in TaskState::ALL {
            for policy in [Fail, Retry, Resume] {
                for because in [LeaseExpired, ServerRestarted] {
                    for attempt in [0, 1, 3] {
                        let decision = decide(state, policy, attempt, 3, because);
                        let recovery = decision.apply(state);
                        assert!(
                            recovery.is_ok(),
                            "{state} {policy:?} {because:?} attempt {attempt}: {decision:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn decisions_write_the_state_the_table_gives() {
        let requeue = RestartDecision::Requeue {
            keep_snapshot: true,
            code: "lease_expired",
        };
        assert_eq!(
            requeue.apply(TaskState::Running),
            Ok(Some(Recovery {
                state: TaskState::Queued,
                code: Some("lease_expired"),
                keep_snapshot: true
            }))
        );
        assert_eq!(
            RestartDecision::Cancel.apply(TaskState::Cancelling),
            Ok(Some(Recovery {
                state: TaskState::Cancelled,
                code: None,
                keep_snapshot: false
            }))
        );
        assert_eq!(RestartDecision::Keep.apply(TaskState::Running), Ok(None));
        assert!(requeue.apply(TaskState::Cancelling).is_err());
    }
}
