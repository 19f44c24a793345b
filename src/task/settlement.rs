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
use super::locality::{Locality, Privacy};
use super::state::{IllegalTransition, TaskState, Transition};
use uuid::Uuid;

/// The longest `retry_after` a worker may report (a day); a model upstream's
/// `Retry-After` has its own, shorter bound (`MAX_UPSTREAM_RETRY_AFTER`).
pub const MAX_WORKER_RETRY_AFTER: Duration = Duration::from_secs(86_400);

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
    /// Every local route gave up; the task may continue on an external worker.
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
    pub locality: Locality,
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
                let delay = retry_after.map(|d| d.min(MAX_WORKER_RETRY_AFTER));
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
            if task.privacy != Privacy::ExternalAllowed || task.locality != Locality::Local {
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
                delay: Some(wait.min(MAX_WORKER_RETRY_AFTER)),
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
#[path = "settlement_tests.rs"]
mod tests;
