//! The settlement rules of `settlement`, one report at a time.

use super::*;

fn running(attempt: u32, max_attempts: u32) -> Leased {
    Leased {
        state: TaskState::Running,
        attempt,
        max_attempts,
        privacy: Privacy::LocalOnly,
        locality: Locality::Local,
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
    assert_eq!(s.delay, Some(MAX_WORKER_RETRY_AFTER));
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
    allowed.locality = Locality::External;
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
