//! Task states and the transition table. Every write in `store` that changes a state
//! corresponds to one [`Transition`] here, and [`TaskState::apply`] is the single place
//! that says which ones are legal: `task::settlement` and `task::restart` take their new
//! states from it, and every statement in `sql/` that changes a state names its
//! transitions in a `-- transition:` header, its `state IN (...)` guard checked against
//! [`Transition::sources`] by `tests/it/sql_statements`.

use std::fmt;
use std::str::FromStr;

/// Where a task is in its life. Terminal states never change again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    Queued,
    Running,
    Cancelling,
    WaitingForRetry,
    WaitingForExternalFallback,
    Succeeded,
    Failed,
    Cancelled,
}

/// Everything that can happen to a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// A worker took the task (fresh lease).
    Claim,
    /// The owner asked to cancel.
    Cancel,
    /// The worker finished with a result.
    Succeed,
    /// A retryable error with attempts left: wait for the backoff.
    RetryLater,
    /// A permanent error, exhausted attempts, a passed deadline or a restart policy `fail`.
    Fail,
    /// Every local route gave up and the task may go external.
    Fallback,
    /// The worker acknowledged a cancel request (or its lease expired while cancelling).
    AckCancel,
    /// A lease expired, a replica restarted or handed its lease back: run again.
    Requeue,
    /// The owner asked for a fresh attempt budget on a failed or cancelled task.
    Retry,
}

impl Transition {
    pub const ALL: [Transition; 9] = [
        Transition::Claim,
        Transition::Cancel,
        Transition::Succeed,
        Transition::RetryLater,
        Transition::Fail,
        Transition::Fallback,
        Transition::AckCancel,
        Transition::Requeue,
        Transition::Retry,
    ];

    /// The states this transition leaves from: the table's column for it. Every SQL
    /// statement that makes it guards on these, or on fewer that its header names with a
    /// reason (checked by `tests/it/sql_statements`).
    pub fn sources(self) -> impl Iterator<Item = TaskState> {
        TaskState::ALL
            .into_iter()
            .filter(move |state| state.apply(self).is_ok())
    }
}

/// A transition that the current state does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("illegal transition {transition:?} from {from}")]
pub struct IllegalTransition {
    pub from: TaskState,
    pub transition: Transition,
}

impl TaskState {
    pub const ALL: [TaskState; 8] = [
        TaskState::Queued,
        TaskState::Running,
        TaskState::Cancelling,
        TaskState::WaitingForRetry,
        TaskState::WaitingForExternalFallback,
        TaskState::Succeeded,
        TaskState::Failed,
        TaskState::Cancelled,
    ];

    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Succeeded | TaskState::Failed | TaskState::Cancelled
        )
    }

    /// States in which a worker holds a lease.
    pub fn is_leased(self) -> bool {
        matches!(self, TaskState::Running | TaskState::Cancelling)
    }

    /// The state after `transition`, or why it is refused. Exhaustive on purpose: adding a
    /// state or a transition does not compile until every pair is decided.
    pub fn apply(self, transition: Transition) -> Result<TaskState, IllegalTransition> {
        use TaskState::*;
        use Transition::*;
        let next = match (self, transition) {
            (Queued | WaitingForRetry | WaitingForExternalFallback, Claim) => Some(Running),
            (Queued | WaitingForRetry | WaitingForExternalFallback, Cancel) => Some(Cancelled),
            (Running, Cancel) => Some(Cancelling),
            (Queued | WaitingForRetry | WaitingForExternalFallback, Fail) => Some(Failed),
            (Running | Cancelling, Succeed) => Some(Succeeded),
            (Running, RetryLater) => Some(WaitingForRetry),
            (Running | Cancelling, Fail) => Some(Failed),
            (Running, Fallback) => Some(WaitingForExternalFallback),
            (Cancelling, AckCancel) => Some(Cancelled),
            (Running, Requeue) => Some(Queued),
            (Failed | Cancelled, Retry) => Some(Queued),
            (Running | Cancelling, Claim) => None,
            (Cancelling, Cancel) => None,
            (Queued | WaitingForRetry | WaitingForExternalFallback, Succeed) => None,
            (Queued | WaitingForRetry | WaitingForExternalFallback | Cancelling, RetryLater) => {
                None
            }
            (Queued | WaitingForRetry | WaitingForExternalFallback | Cancelling, Fallback) => None,
            (Queued | WaitingForRetry | WaitingForExternalFallback | Running, AckCancel) => None,
            (Queued | WaitingForRetry | WaitingForExternalFallback | Cancelling, Requeue) => None,
            (
                Queued | Running | Cancelling | WaitingForRetry | WaitingForExternalFallback,
                Retry,
            ) => None,
            (Succeeded, Retry) => None,
            (Succeeded | Failed | Cancelled, Claim | Cancel | Succeed | RetryLater | Fail) => None,
            (Succeeded | Failed | Cancelled, Fallback | AckCancel | Requeue) => None,
        };
        next.ok_or(IllegalTransition {
            from: self,
            transition,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Queued => "queued",
            TaskState::Running => "running",
            TaskState::Cancelling => "cancelling",
            TaskState::WaitingForRetry => "waiting_for_retry",
            TaskState::WaitingForExternalFallback => "waiting_for_external_fallback",
            TaskState::Succeeded => "succeeded",
            TaskState::Failed => "failed",
            TaskState::Cancelled => "cancelled",
        }
    }

    /// The name of the event that reports entering this state (`task.<state>`).
    pub fn event_type(self) -> String {
        format!("task.{}", self.as_str())
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A state name that is not one of ours.
#[derive(Debug, thiserror::Error)]
#[error("unknown task state {0:?}")]
pub struct UnknownState(pub String);

impl FromStr for TaskState {
    type Err = UnknownState;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TaskState::ALL
            .into_iter()
            .find(|state| state.as_str() == s)
            .ok_or_else(|| UnknownState(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TaskState::*;
    use Transition::*;

    #[test]
    fn terminal_states_only_leave_through_an_explicit_retry() {
        for state in [Succeeded, Failed, Cancelled] {
            for transition in Transition::ALL {
                let result = state.apply(transition);
                match (state, transition) {
                    (Failed | Cancelled, Retry) => assert_eq!(result, Ok(Queued)),
                    _ => assert!(result.is_err(), "{state} allowed {transition:?}"),
                }
            }
        }
    }

    #[test]
    fn cancel_is_immediate_before_start_and_cooperative_after() {
        assert_eq!(Queued.apply(Cancel), Ok(Cancelled));
        assert_eq!(WaitingForRetry.apply(Cancel), Ok(Cancelled));
        assert_eq!(Running.apply(Cancel), Ok(Cancelling));
        assert!(Cancelling.apply(Cancel).is_err());
        assert_eq!(Cancelling.apply(AckCancel), Ok(Cancelled));
        assert_eq!(Cancelling.apply(Succeed), Ok(Succeeded));
    }

    #[test]
    fn only_unleased_waiting_states_can_be_claimed() {
        let claimable: Vec<_> = Claim.sources().collect();
        assert_eq!(
            claimable,
            vec![Queued, WaitingForRetry, WaitingForExternalFallback]
        );
    }

    #[test]
    fn every_state_round_trips_through_its_name() {
        for state in TaskState::ALL {
            assert_eq!(state.as_str().parse::<TaskState>().unwrap(), state);
        }
        assert_eq!(Succeeded.event_type(), "task.succeeded");
        assert!("done".parse::<TaskState>().is_err());
    }
}
