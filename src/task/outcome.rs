//! How an attempt ends: the worker's report turned into the task's next state. Pure, so
//! the rules (cancel wins over errors, attempts are capped, fallback needs consent) are
//! tested without a database and applied by `store::lease::settle` under the row lock.
//! The rules here choose a [`Transition`]; the state it leads to comes from
//! [`TaskState::apply`], so a report can never move a task along an edge the table lacks.

use std::time::Duration;

use super::attempt::Facts;
use super::backoff::Backoff;
use super::bounds;
use super::codes;
use super::routes::{Privacy, Route};
use super::state::{IllegalTransition, TaskState, Transition};
use uuid::Uuid;

/// The longest `retry_after` a worker may ask for.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(86_400);

/// What a worker reports at the end of an attempt (success has its own fast path).
#[derive(Debug, Clone, PartialEq)]
pub enum Report {
    /// The attempt failed; `retryable` says whether another attempt may succeed.
    Error {
        code: String,
        message: String,
        retryable: bool,
        retry_after: Option<Duration>,
    },
    /// The attempt ran past its timeout.
    TimedOut,
    /// The local route gave up; the task may continue on an external worker.
    Fallback { reason: String },
    /// The worker stopped because cancellation was requested.
    Cancelled,
    /// No call was made: every route the attempt may use has its circuit open. The
    /// attempt does not count; the task waits `wait` (the routes' earliest reopening),
    /// for at most the type's circuit wait in a row.
    Deferred { message: String, wait: Duration },
}

/// What to write: the new state, its error code and message, and when it may run again.
#[derive(Debug, Clone, PartialEq)]
pub struct Settlement {
    /// The state `transition` leads to from the leased state (the transition table's answer).
    pub state: TaskState,
    /// The edge of the transition table this settlement takes.
    pub transition: Transition,
    pub code: Option<&'static str>,
    pub message: Option<String>,
    /// For `waiting_for_retry`: the delay before it is claimable again.
    pub delay: Option<Duration>,
    /// The ended attempt's own code where it is not the task's: a last attempt that
    /// timed out or failed retryably fails the task as `attempts_exhausted`, while its
    /// attempt row keeps what it ended with (`attempt_timeout`, `handler_error`, ...).
    pub attempt_code: Option<&'static str>,
    /// The attempt made no call and does not count (see [`Report::Deferred`]).
    pub deferred: bool,
}

/// The facts of the leased row that the decision needs.
#[derive(Debug, Clone, Copy)]
pub struct Leased {
    pub state: TaskState,
    pub attempt: u32,
    pub max_attempts: u32,
    pub privacy: Privacy,
    pub route: Route,
    /// How long the task has waited for open circuits, since its first deferral in a
    /// row (zero when it is not waiting).
    pub circuit_waited: Duration,
}

/// A settlement before the table has named its target state.
struct Step {
    transition: Transition,
    code: Option<&'static str>,
    message: Option<String>,
    delay: Option<Duration>,
    attempt_code: Option<&'static str>,
    deferred: bool,
}

/// The type's rules a settlement applies.
#[derive(Debug, Clone, Copy)]
pub struct Rules<'a> {
    pub backoff: &'a Backoff,
    /// The longest a task waits for open circuits in a row before it fails
    /// `no_fallback_allowed`.
    pub circuit_wait: Duration,
}

/// Decides how `report` settles the task. A task whose cancellation was requested is
/// cancelled by any report other than success: the owner asked it to stop. Only a
/// leased task has an attempt to end: any other state is refused (as `Fail`), even where
/// the table would let it fail for another reason (a passed queue deadline).
pub fn settle(
    task: Leased,
    report: Report,
    rules: Rules<'_>,
) -> Result<Settlement, IllegalTransition> {
    if !task.state.is_leased() {
        return Err(IllegalTransition {
            from: task.state,
            transition: Transition::Fail,
        });
    }
    let step = decide(task, report, rules);
    Ok(Settlement {
        state: task.state.apply(step.transition)?,
        transition: step.transition,
        code: step.code,
        message: step.message,
        delay: step.delay,
        attempt_code: step.attempt_code,
        deferred: step.deferred,
    })
}

/// The transition a report asks for, with what it records. Which of them the leased
/// state allows is left to the table (a `cancelled` report from a running task, whose
/// cancel nobody requested, is refused there).
fn decide(task: Leased, report: Report, rules: Rules<'_>) -> Step {
    let backoff = rules.backoff;
    if task.state == TaskState::Cancelling {
        return step(Transition::AckCancel, None, None);
    }
    match report {
        Report::Cancelled => step(Transition::AckCancel, None, None),
        Report::Error {
            code,
            message,
            retryable,
            retry_after,
        } => {
            let stable = stable_code(&code);
            // A stable code speaks for itself; another is kept in the message.
            let message = match stable {
                Some(_) => bounds::truncate(&message, bounds::ERROR_MESSAGE_BYTES).to_owned(),
                None => describe(&code, &message),
            };
            if !retryable {
                failed(stable.unwrap_or(codes::PERMANENT_ERROR), message)
            } else {
                let delay = retry_after.map(|d| d.min(MAX_RETRY_AFTER));
                let code = stable.unwrap_or(codes::HANDLER_ERROR);
                retry_or_exhaust(task, code, message, delay, backoff)
            }
        }
        Report::TimedOut => {
            let message = "the attempt ran past its timeout".to_owned();
            retry_or_exhaust(task, codes::ATTEMPT_TIMEOUT, message, None, backoff)
        }
        Report::Fallback { reason } => {
            let message = bounds::truncate(&reason, bounds::ERROR_MESSAGE_BYTES).to_owned();
            if task.privacy != Privacy::ExternalAllowed || task.route != Route::Local {
                failed(codes::NO_FALLBACK_ALLOWED, message)
            } else if task.attempt >= task.max_attempts {
                // The external attempt would be one past max_attempts (every claim
                // counts one): the task is out of attempts, as a retry would be.
                failed(codes::ATTEMPTS_EXHAUSTED, message)
            } else {
                // The task waits for an external worker with no error of its own; the
                // attempt that left the local routes keeps why.
                Step {
                    attempt_code: leading_code(&reason),
                    ..step(Transition::Fallback, None, Some(message))
                }
            }
        }
        Report::Deferred { message, wait } => {
            let message = bounds::truncate(&message, bounds::ERROR_MESSAGE_BYTES).to_owned();
            if task.circuit_waited >= rules.circuit_wait {
                let message = format!(
                    "waited {} s for the circuits of the routes this task may use: {message}",
                    task.circuit_waited.as_secs()
                );
                return failed(codes::NO_FALLBACK_ALLOWED, message);
            }
            Step {
                transition: Transition::RetryLater,
                code: Some(codes::CIRCUIT_OPEN),
                message: Some(message),
                delay: Some(wait.min(MAX_RETRY_AFTER)),
                attempt_code: None,
                deferred: true,
            }
        }
    }
}

/// The stable code a reason starts with as `[code] ...` (how the `openai` executor
/// says why it left the local routes).
fn leading_code(reason: &str) -> Option<&'static str> {
    let code = reason.strip_prefix('[')?.split_once(']')?.0;
    stable_code(code)
}

fn step(transition: Transition, code: Option<&'static str>, message: Option<String>) -> Step {
    Step {
        transition,
        code,
        message,
        delay: None,
        attempt_code: None,
        deferred: false,
    }
}

fn failed(code: &'static str, message: String) -> Step {
    step(Transition::Fail, Some(code), Some(message))
}

/// Another attempt after the backoff, or `attempts_exhausted` once none are left.
fn retry_or_exhaust(
    task: Leased,
    code: &'static str,
    message: String,
    delay: Option<Duration>,
    backoff: &Backoff,
) -> Step {
    if task.attempt >= task.max_attempts {
        // No attempt gave an answer that matched the output schema: that, not the
        // generic exhaustion, is what the owner needs to read on the failed task.
        if code == codes::INVALID_OUTPUT {
            return failed(code, message);
        }
        return Step {
            attempt_code: Some(code),
            ..failed(codes::ATTEMPTS_EXHAUSTED, message)
        };
    }
    Step {
        transition: Transition::RetryLater,
        code: Some(code),
        message: Some(message),
        delay: Some(delay.unwrap_or_else(|| backoff.jittered(task.attempt))),
        attempt_code: None,
        deferred: false,
    }
}

/// A worker's own code is kept when it is one of the stable codes a failure may carry
/// (the upstream and routing codes among them); any other code is reported as
/// `handler_error` (retryable) or `permanent_error`, with the worker's code kept in the
/// message.
fn stable_code(code: &str) -> Option<&'static str> {
    [
        codes::ATTEMPT_TIMEOUT,
        codes::NO_FALLBACK_ALLOWED,
        codes::UPSTREAM_UNAVAILABLE,
        codes::UPSTREAM_REJECTED,
        codes::UPSTREAM_QUOTA_EXHAUSTED,
        codes::CIRCUIT_OPEN,
        codes::BUDGET_EXHAUSTED,
        codes::INVALID_OUTPUT,
    ]
    .into_iter()
    .find(|stable| *stable == code)
}

/// `[code] message`, bounded.
fn describe(code: &str, message: &str) -> String {
    let text = if code.is_empty() {
        message.to_owned()
    } else {
        format!("[{code}] {message}")
    };
    bounds::truncate(&text, bounds::ERROR_MESSAGE_BYTES).to_owned()
}

/// What a successful attempt reports.
#[derive(Debug, Clone, Default)]
pub struct Success {
    pub result: serde_json::Value,
    /// Budget units this attempt consumed, for executors that count their own (custom
    /// handlers, remote workers); without them the attempt is charged its
    /// `facts.usage.total_tokens`.
    pub usage_units: Option<i64>,
    /// Where the attempt ran and the tokens it used, written with its attempt row. The
    /// in-process runner adds what the handler recorded on its context.
    pub facts: Facts,
}

/// An attempt that ended other than in success: the worker's report and what the
/// attempt recorded.
#[derive(Debug, Clone)]
pub struct Reported {
    pub report: Report,
    /// Provenance and tokens, written with the attempt row and charged to budgets.
    pub facts: Facts,
    /// Budget units reported instead of tokens (custom handlers).
    pub usage_units: Option<i64>,
}

/// One completion of a batch.
#[derive(Debug, Clone)]
pub struct Completion {
    pub id: Uuid,
    pub lease_token: Uuid,
    pub success: Success,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running(attempt: u32, max_attempts: u32) -> Leased {
        Leased {
            state: TaskState::Running,
            attempt,
            max_attempts,
            privacy: Privacy::LocalOnly,
            route: Route::Local,
            circuit_waited: Duration::ZERO,
        }
    }

    fn rules(backoff: &Backoff) -> Rules<'_> {
        Rules {
            backoff,
            circuit_wait: Duration::from_secs(3600),
        }
    }

    fn error(retryable: bool) -> Report {
        Report::Error {
            code: "boom".into(),
            message: "it broke".into(),
            retryable,
            retry_after: None,
        }
    }

    #[test]
    fn retryable_errors_wait_until_attempts_run_out() {
        let backoff = Backoff::default();
        let s = settle(running(1, 3), error(true), rules(&backoff)).unwrap();
        assert_eq!(s.state, TaskState::WaitingForRetry);
        assert_eq!(s.code, Some("handler_error"));
        assert_eq!(s.message.as_deref(), Some("[boom] it broke"));
        assert!(s.delay.unwrap() <= backoff.ceiling(1));
        let s = settle(running(3, 3), error(true), rules(&backoff)).unwrap();
        assert_eq!(
            (s.state, s.code),
            (TaskState::Failed, Some("attempts_exhausted"))
        );
    }

    #[test]
    fn permanent_errors_fail_at_once() {
        let s = settle(running(1, 3), error(false), rules(&Backoff::default())).unwrap();
        assert_eq!(
            (s.state, s.code),
            (TaskState::Failed, Some("permanent_error"))
        );
    }

    #[test]
    fn retry_after_is_honoured_and_capped() {
        let report = |secs| Report::Error {
            code: String::new(),
            message: "slow down".into(),
            retryable: true,
            retry_after: Some(Duration::from_secs(secs)),
        };
        let s = settle(running(1, 3), report(7), rules(&Backoff::default())).unwrap();
        assert_eq!(s.delay, Some(Duration::from_secs(7)));
        let s = settle(
            running(1, 3),
            report(10_000_000),
            rules(&Backoff::default()),
        )
        .unwrap();
        assert_eq!(s.delay, Some(MAX_RETRY_AFTER));
    }

    #[test]
    fn timeouts_retry_with_their_own_code() {
        let s = settle(running(1, 2), Report::TimedOut, rules(&Backoff::default())).unwrap();
        assert_eq!(
            (s.state, s.code, s.attempt_code),
            (TaskState::WaitingForRetry, Some("attempt_timeout"), None)
        );
        // The last attempt: the task is out of attempts, the attempt itself timed out.
        let s = settle(running(2, 2), Report::TimedOut, rules(&Backoff::default())).unwrap();
        assert_eq!(
            (s.state, s.code, s.attempt_code),
            (
                TaskState::Failed,
                Some("attempts_exhausted"),
                Some("attempt_timeout")
            )
        );
    }

    #[test]
    fn invalid_output_retries_and_fails_the_last_attempt_with_its_own_code() {
        let report = || Report::Error {
            code: "invalid_output".into(),
            message: "the answer is not JSON".into(),
            retryable: true,
            retry_after: None,
        };
        let s = settle(running(1, 2), report(), rules(&Backoff::default())).unwrap();
        assert_eq!(
            (s.state, s.code),
            (TaskState::WaitingForRetry, Some("invalid_output"))
        );
        let s = settle(running(2, 2), report(), rules(&Backoff::default())).unwrap();
        assert_eq!(
            (s.state, s.code, s.attempt_code, s.message.as_deref()),
            (
                TaskState::Failed,
                Some("invalid_output"),
                None,
                Some("the answer is not JSON")
            )
        );
    }

    #[test]
    fn fallback_needs_external_consent_and_a_local_route() {
        let fallback = || Report::Fallback {
            reason: "model overloaded".into(),
        };
        let s = settle(running(1, 3), fallback(), rules(&Backoff::default())).unwrap();
        assert_eq!(
            (s.state, s.code),
            (TaskState::Failed, Some("no_fallback_allowed"))
        );
        let mut allowed = running(1, 3);
        allowed.privacy = Privacy::ExternalAllowed;
        let s = settle(allowed, fallback(), rules(&Backoff::default())).unwrap();
        assert_eq!(s.state, TaskState::WaitingForExternalFallback);
        allowed.route = Route::External;
        let s = settle(allowed, fallback(), rules(&Backoff::default())).unwrap();
        assert_eq!(s.state, TaskState::Failed);
    }

    #[test]
    fn a_deferred_attempt_waits_uncounted_until_the_circuit_wait_runs_out() {
        let deferred = || Report::Deferred {
            message: "every local route's circuit is open (local-a)".into(),
            wait: Duration::from_secs(20),
        };
        // The last attempt too: a deferral is not an attempt.
        let s = settle(running(3, 3), deferred(), rules(&Backoff::default())).unwrap();
        assert_eq!(
            (s.state, s.code, s.deferred, s.delay),
            (
                TaskState::WaitingForRetry,
                Some("circuit_open"),
                true,
                Some(Duration::from_secs(20))
            )
        );
        let mut waited = running(1, 3);
        waited.circuit_waited = Duration::from_secs(3600);
        let s = settle(waited, deferred(), rules(&Backoff::default())).unwrap();
        assert_eq!(
            (s.state, s.code, s.deferred),
            (TaskState::Failed, Some("no_fallback_allowed"), false)
        );
        assert!(s.message.unwrap().contains("waited 3600 s"));
    }

    #[test]
    fn a_fallback_attempt_keeps_why_it_left_the_local_routes() {
        let mut allowed = running(1, 3);
        allowed.privacy = Privacy::ExternalAllowed;
        let fallback = Report::Fallback {
            reason: "[circuit_open] every local route's circuit is open (local-a)".into(),
        };
        let s = settle(allowed, fallback, rules(&Backoff::default())).unwrap();
        assert_eq!(
            (s.state, s.code, s.attempt_code),
            (
                TaskState::WaitingForExternalFallback,
                None,
                Some("circuit_open")
            )
        );
        let unnamed = Report::Fallback {
            reason: "local down".into(),
        };
        let s = settle(allowed, unnamed, rules(&Backoff::default())).unwrap();
        assert_eq!(s.attempt_code, None);
    }

    #[test]
    fn a_fallback_never_allows_an_attempt_past_max_attempts() {
        let mut last = running(3, 3);
        last.privacy = Privacy::ExternalAllowed;
        let fallback = Report::Fallback {
            reason: "local down".into(),
        };
        let s = settle(last, fallback, rules(&Backoff::default())).unwrap();
        assert_eq!(
            (s.state, s.code),
            (TaskState::Failed, Some("attempts_exhausted"))
        );
    }

    #[test]
    fn stable_codes_are_kept_and_others_reported_generically() {
        let report = |code: &str, retryable| Report::Error {
            code: code.into(),
            message: "HTTP 429: slow down".into(),
            retryable,
            retry_after: None,
        };
        let backoff = Backoff::default();
        for code in [
            "upstream_rejected",
            "upstream_quota_exhausted",
            "no_fallback_allowed",
        ] {
            let s = settle(running(1, 3), report(code, false), rules(&backoff)).unwrap();
            assert_eq!((s.state, s.code), (TaskState::Failed, Some(code)));
            assert_eq!(s.message.as_deref(), Some("HTTP 429: slow down"));
        }
        for code in ["upstream_unavailable", "circuit_open"] {
            let s = settle(running(1, 3), report(code, true), rules(&backoff)).unwrap();
            assert_eq!((s.state, s.code), (TaskState::WaitingForRetry, Some(code)));
        }
        let s = settle(running(1, 3), report("made_up", false), rules(&backoff)).unwrap();
        assert_eq!(s.code, Some("permanent_error"));
        assert_eq!(s.message.as_deref(), Some("[made_up] HTTP 429: slow down"));
    }

    #[test]
    fn a_requested_cancel_wins_over_any_failure() {
        let mut cancelling = running(1, 3);
        cancelling.state = TaskState::Cancelling;
        for report in [
            error(true),
            error(false),
            Report::TimedOut,
            Report::Cancelled,
        ] {
            assert_eq!(
                settle(cancelling, report, rules(&Backoff::default()))
                    .unwrap()
                    .state,
                TaskState::Cancelled
            );
        }
        assert!(settle(running(1, 3), Report::Cancelled, rules(&Backoff::default())).is_err());
    }

    #[test]
    fn messages_are_bounded() {
        let report = Report::Error {
            code: "x".into(),
            message: "m".repeat(5000),
            retryable: false,
            retry_after: None,
        };
        let s = settle(running(1, 3), report, rules(&Backoff::default())).unwrap();
        assert_eq!(s.message.unwrap().len(), bounds::ERROR_MESSAGE_BYTES);
    }

    #[test]
    fn only_a_leased_task_can_be_settled() {
        for state in TaskState::ALL.into_iter().filter(|s| !s.is_leased()) {
            let mut task = running(1, 3);
            task.state = state;
            for report in [error(false), Report::TimedOut, Report::Cancelled] {
                assert_eq!(
                    settle(task, report, rules(&Backoff::default())),
                    Err(IllegalTransition {
                        from: state,
                        transition: Transition::Fail
                    })
                );
            }
        }
    }

    #[test]
    fn each_settlement_names_the_edge_it_takes() {
        let backoff = Backoff::default();
        let s = settle(running(1, 3), error(true), rules(&backoff)).unwrap();
        assert_eq!(s.transition, Transition::RetryLater);
        let s = settle(running(3, 3), error(true), rules(&backoff)).unwrap();
        assert_eq!(s.transition, Transition::Fail);
        let mut cancelling = running(1, 3);
        cancelling.state = TaskState::Cancelling;
        let s = settle(cancelling, Report::TimedOut, rules(&backoff)).unwrap();
        assert_eq!(
            (s.transition, s.state),
            (Transition::AckCancel, TaskState::Cancelled)
        );
    }
}
