//! What an `openai` attempt ends with when none of its routes answered: every one
//! failed transiently or had its circuit open. A fallback to the external routes, a
//! deferral while every circuit is open, `no_fallback_allowed` for a `local_only` task's
//! last attempt, or a retry.

use std::time::Duration;

use super::openai_answer::{self, Failure};
use crate::task::{codes, Locality, Privacy, TaskType};

use super::super::handler::{HandlerError, TaskContext};

/// The routes an attempt skipped because their circuit was open, and the earliest time
/// one of them takes a probe.
pub(super) struct Open<'a> {
    pub(super) routes: Vec<&'a str>,
    pub(super) reopens: Option<chrono::DateTime<chrono::Utc>>,
}

/// What an attempt whose routes all failed transiently or were open ends with.
pub(super) fn exhausted(
    task_type: &TaskType,
    ctx: &TaskContext,
    kind: Locality,
    tried: usize,
    last: Option<Failure>,
    open: Open<'_>,
) -> HandlerError {
    let all_open = last.is_none() && tried > 0;
    let (code, message, retry_after) = match last {
        Some(failure) => (failure.code, failure.message, failure.retry_after),
        None if tried == 0 => (
            codes::UPSTREAM_UNAVAILABLE,
            format!("the type has no {} route", kind.as_str()),
            None,
        ),
        None => {
            // Every route was open: try again when the first one may take a probe.
            let wait = open
                .reopens
                .and_then(|at| (at - chrono::Utc::now()).to_std().ok())
                .map(|d| d.min(openai_answer::MAX_UPSTREAM_RETRY_AFTER));
            let message = format!(
                "every {} route's circuit is open ({})",
                kind.as_str(),
                open.routes.join(", ")
            );
            (codes::CIRCUIT_OPEN, message, wait)
        }
    };
    let fallback_exists = kind == Locality::Local && task_type.has_routes(Locality::External);
    if fallback_exists && ctx.task.privacy == Privacy::ExternalAllowed {
        return HandlerError::Fallback {
            reason: format!("[{code}] {message}"),
        };
    }
    if all_open {
        // Nothing was called and nothing else may be: the task waits for the
        // circuits without spending an attempt. Spread over a quarter of the wait
        // (at least a second), so the tasks waiting on one circuit do not all come
        // back at the instant it takes its one probe.
        let wait = retry_after.unwrap_or_default();
        let spread = (wait / 4).max(Duration::from_secs(1));
        let jitter = spread.mul_f64(rand::random::<f64>());
        return HandlerError::Deferred {
            message,
            wait: wait + jitter,
        };
    }
    if fallback_exists && ctx.task.attempt >= ctx.task.max_attempts {
        return HandlerError::Permanent {
            code: codes::NO_FALLBACK_ALLOWED.into(),
            message: format!(
                "the local routes are exhausted and the task is local_only: [{code}] {message}"
            ),
        };
    }
    HandlerError::Retryable {
        code: code.into(),
        message,
        retry_after,
    }
}
