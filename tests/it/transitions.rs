//! Every transition of the transition table (`task::state`) against a real PostgreSQL,
//! each with its single event, and the fencing of stale workers.

use crate::common;

use common::fixtures::*;
use tasklane::store::complete_many::complete_many;
use tasklane::store::lease::{self, LeaseError};
use tasklane::store::query;
use tasklane::task::lease::Beat;
use tasklane::task::owner::Owner;
use tasklane::task::settlement::Completion;
use tasklane::task::settlement::Report;
use tasklane::task::settlement::Success;
use tasklane::task::TaskState;

#[tokio::test]
async fn submit_writes_queued_with_event_one() {
    let db = common::test_db().await;
    let c = db.client().await;
    let task = submit(&c, "k1", serde_json::json!({"n": 1})).await;
    assert_eq!(task.state, TaskState::Queued);
    assert_eq!(event_types(&c, task.id).await, vec!["task.queued"]);
}

#[tokio::test]
async fn claim_complete_writes_running_then_succeeded() {
    let db = common::test_db().await;
    let c = db.client().await;
    let task = submit(&c, "k1", serde_json::json!({"n": 1})).await;
    let claimed = claim_one(&c).await;
    assert_eq!((claimed.id, claimed.attempt), (task.id, 1));
    let success = Success {
        result: serde_json::json!({"ok": true}),
        usage_units: Some(7),
        ..Default::default()
    };
    lease::complete(&c, claimed.id, claimed.lease_token, &success)
        .await
        .unwrap();
    let done = get(&c, task.id).await;
    assert_eq!(done.state, TaskState::Succeeded);
    assert_eq!(done.result, Some(serde_json::json!({"ok": true})));
    assert!(done.finished_at.is_some());
    assert_eq!(
        event_types(&c, task.id).await,
        vec!["task.queued", "task.running", "task.succeeded"]
    );
    // Terminal: a second completion is refused as a lost lease and writes nothing.
    let again = lease::complete(&c, claimed.id, claimed.lease_token, &success).await;
    assert!(matches!(again, Err(LeaseError::Lost)));
    assert_eq!(event_types(&c, task.id).await.len(), 3);
}

/// One claim draws one fresh lease token for the tasks it takes (V32), and the next
/// claim another; the events of a first attempt (written from constants) and of a later
/// one (built) carry the same data shape.
#[tokio::test]
async fn a_claims_tasks_share_its_token_and_events_carry_attempt_and_route() {
    let db = common::test_db().await;
    let mut c = db.client().await;
    let retried = submit_with(&c, "retried", serde_json::json!({}), |r| {
        r.max_attempts = Some(2)
    })
    .await;
    let other = submit(&c, "other", serde_json::json!({})).await;
    let later = submit(&c, "later", serde_json::json!({})).await;
    let both = claim(&c, 2).await;
    assert_eq!(
        both.iter().map(|t| t.id).collect::<Vec<_>>(),
        vec![retried.id, other.id]
    );
    assert_eq!(
        both[0].lease_token, both[1].lease_token,
        "one token a claim"
    );
    let third = claim_one(&c).await;
    assert_eq!(third.id, later.id);
    assert_ne!(
        third.lease_token, both[0].lease_token,
        "a fresh one the next"
    );

    let report = Report::Error {
        code: "x".into(),
        message: "boom".into(),
        retryable: true,
        retry_after: None,
    };
    lease::settle(
        &mut c,
        retried.id,
        both[0].lease_token,
        report,
        &fast_backoff(),
    )
    .await
    .unwrap();
    make_due(&c, retried.id).await;
    let again = claim_one(&c).await;
    assert_eq!((again.id, again.attempt), (retried.id, 2));
    assert_ne!(again.lease_token, both[0].lease_token);
    let mut batch = vec![
        Completion {
            id: retried.id,
            lease_token: again.lease_token,
            success: Success::default(),
        },
        Completion {
            id: other.id,
            lease_token: both[1].lease_token,
            success: Success::default(),
        },
    ];
    batch.sort_by_key(|c| c.id);
    let object = db.pool.get().await.unwrap();
    let answers = complete_many(&object, &batch, None).await.unwrap().answers;
    assert!(answers.iter().all(|a| a.is_ok()), "{answers:?}");

    let data = |id| {
        let c = &c;
        async move {
            c.query(
                "SELECT type, data FROM tasklane.task_events
                 WHERE task_id = $1 AND type IN ('task.running', 'task.succeeded') ORDER BY seq",
                &[&id],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get::<_, String>(0), r.get::<_, serde_json::Value>(1)))
            .collect::<Vec<_>>()
        }
    };
    let running = |n: i64| {
        (
            "task.running".to_owned(),
            serde_json::json!({"attempt": n, "route": "local"}),
        )
    };
    let succeeded = |n: i64| {
        (
            "task.succeeded".to_owned(),
            serde_json::json!({"attempt": n}),
        )
    };
    assert_eq!(data(other.id).await, vec![running(1), succeeded(1)]);
    assert_eq!(
        data(retried.id).await,
        vec![running(1), running(2), succeeded(2)]
    );
}

#[tokio::test]
async fn retryable_error_waits_then_exhausts_attempts() {
    let db = common::test_db().await;
    let mut c = db.client().await;
    let task = submit_with(&c, "k1", serde_json::json!({}), |r| {
        r.max_attempts = Some(2)
    })
    .await;
    for attempt in 1..=2 {
        let claimed = claim_one(&c).await;
        assert_eq!(claimed.attempt, attempt);
        let report = Report::Error {
            code: "x".into(),
            message: "boom".into(),
            retryable: true,
            retry_after: None,
        };
        let state = lease::settle(
            &mut c,
            claimed.id,
            claimed.lease_token,
            report,
            &fast_backoff(),
        )
        .await
        .unwrap();
        if attempt == 1 {
            assert_eq!(state, TaskState::WaitingForRetry);
            make_due(&c, task.id).await;
        } else {
            assert_eq!(state, TaskState::Failed);
        }
    }
    let done = get(&c, task.id).await;
    assert_eq!(
        (done.state, done.error_code.as_deref()),
        (TaskState::Failed, Some("attempts_exhausted"))
    );
    assert_eq!(done.attempt, 2);
    assert_eq!(
        event_types(&c, task.id).await,
        vec![
            "task.queued",
            "task.running",
            "task.waiting_for_retry",
            "task.running",
            "task.failed"
        ]
    );
    // max_attempts is never exceeded: nothing is claimable any more.
    assert!(claim(&c, 10).await.is_empty());
}

#[tokio::test]
async fn retry_delay_grows_and_is_capped() {
    let db = common::test_db().await;
    let mut c = db.client().await;
    let task = submit_with(&c, "k1", serde_json::json!({}), |r| {
        r.max_attempts = Some(6)
    })
    .await;
    let backoff = tasklane::task::backoff::Backoff {
        base: std::time::Duration::from_secs(10),
        cap: std::time::Duration::from_secs(40),
    };
    let mut delays = Vec::new();
    for _ in 1..=5 {
        let claimed = claim_one(&c).await;
        let report = Report::Error {
            code: "x".into(),
            message: "m".into(),
            retryable: true,
            retry_after: None,
        };
        lease::settle(&mut c, claimed.id, claimed.lease_token, report, &backoff)
            .await
            .unwrap();
        delays.push(run_at_delay_seconds(&c, task.id).await);
        make_due(&c, task.id).await;
    }
    // Each delay lies in [ceiling/2, ceiling] with ceilings 10, 20, 40, 40, 40.
    for (delay, ceiling) in delays.iter().zip([10.0, 20.0, 40.0, 40.0, 40.0]) {
        assert!(
            *delay >= ceiling / 2.0 - 1.0 && *delay <= ceiling + 1.0,
            "{delays:?}"
        );
    }
}

#[tokio::test]
async fn permanent_error_fails_at_once() {
    let db = common::test_db().await;
    let mut c = db.client().await;
    let task = submit(&c, "k1", serde_json::json!({})).await;
    let claimed = claim_one(&c).await;
    let report = Report::Error {
        code: "bad".into(),
        message: "no".into(),
        retryable: false,
        retry_after: None,
    };
    lease::settle(
        &mut c,
        claimed.id,
        claimed.lease_token,
        report,
        &fast_backoff(),
    )
    .await
    .unwrap();
    let done = get(&c, task.id).await;
    assert_eq!(
        (done.state, done.error_code.as_deref()),
        (TaskState::Failed, Some("permanent_error"))
    );
    assert_eq!(done.error_message.as_deref(), Some("[bad] no"));
}

#[tokio::test]
async fn fallback_goes_external_only_with_consent() {
    let db = common::test_db().await;
    let mut c = db.client().await;
    let private = submit(&c, "private", serde_json::json!({})).await;
    let shared = submit_with(&c, "shared", serde_json::json!({}), |r| {
        r.privacy = Some(tasklane::task::Privacy::ExternalAllowed)
    })
    .await;
    for claimed in claim(&c, 2).await {
        let report = Report::Fallback {
            reason: "overloaded".into(),
        };
        lease::settle(
            &mut c,
            claimed.id,
            claimed.lease_token,
            report,
            &fast_backoff(),
        )
        .await
        .unwrap();
    }
    let p = get(&c, private.id).await;
    assert_eq!(
        (p.state, p.error_code.as_deref()),
        (TaskState::Failed, Some("no_fallback_allowed"))
    );
    assert_eq!(
        get(&c, shared.id).await.state,
        TaskState::WaitingForExternalFallback
    );
    // Local workers never take it; an external worker does.
    assert!(claim(&c, 10).await.is_empty());
    let external = claim_at(&c, tasklane::task::Locality::External, 10).await;
    assert_eq!(external.len(), 1);
    assert_eq!(external[0].id, shared.id);
}

#[tokio::test]
async fn local_only_tasks_are_never_claimed_by_external_workers() {
    let db = common::test_db().await;
    let c = db.client().await;
    submit(&c, "private", serde_json::json!({})).await;
    assert!(claim_at(&c, tasklane::task::Locality::External, 10)
        .await
        .is_empty());
    assert_eq!(claim(&c, 10).await.len(), 1);
}

#[tokio::test]
async fn cancel_queued_is_immediate_and_running_is_cooperative() {
    let db = common::test_db().await;
    let mut c = db.client().await;
    let owner = Owner::app(APP);
    let queued = submit(&c, "q", serde_json::json!({})).await;
    let cancelled = tasklane::store::cancel::cancel(&c, &owner, queued.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(cancelled.state, TaskState::Cancelled);
    assert_eq!(
        event_types(&c, queued.id).await,
        vec!["task.queued", "task.cancelled"]
    );

    let running = submit(&c, "r", serde_json::json!({})).await;
    let claimed = claim_one(&c).await;
    assert_eq!(
        tasklane::store::cancel::cancel(&c, &owner, running.id)
            .await
            .unwrap()
            .unwrap()
            .state,
        TaskState::Cancelling
    );
    // A second cancel changes nothing and writes no event.
    assert_eq!(
        tasklane::store::cancel::cancel(&c, &owner, running.id)
            .await
            .unwrap()
            .unwrap()
            .state,
        TaskState::Cancelling
    );
    let answer = lease::heartbeat(&c, claimed.id, claimed.lease_token, &Beat::default())
        .await
        .unwrap();
    assert!(answer.cancel_requested);
    lease::settle(
        &mut c,
        claimed.id,
        claimed.lease_token,
        Report::Cancelled,
        &fast_backoff(),
    )
    .await
    .unwrap();
    assert_eq!(get(&c, running.id).await.state, TaskState::Cancelled);
    assert_eq!(
        event_types(&c, running.id).await,
        vec![
            "task.queued",
            "task.running",
            "task.cancelling",
            "task.cancelled"
        ]
    );
    // Terminal: cancel leaves it as it is.
    assert_eq!(
        tasklane::store::cancel::cancel(&c, &owner, running.id)
            .await
            .unwrap()
            .unwrap()
            .state,
        TaskState::Cancelled
    );
    assert_eq!(event_types(&c, running.id).await.len(), 4);
}

#[tokio::test]
async fn a_cancel_never_acknowledged_without_request_is_refused() {
    let db = common::test_db().await;
    let mut c = db.client().await;
    submit(&c, "r", serde_json::json!({})).await;
    let claimed = claim_one(&c).await;
    let result = lease::settle(
        &mut c,
        claimed.id,
        claimed.lease_token,
        Report::Cancelled,
        &fast_backoff(),
    )
    .await;
    assert!(matches!(result, Err(LeaseError::Illegal(_))));
    assert_eq!(get(&c, claimed.id).await.state, TaskState::Running);
}

#[tokio::test]
async fn another_owner_cannot_see_or_cancel() {
    let db = common::test_db().await;
    let c = db.client().await;
    let task = submit(&c, "k", serde_json::json!({})).await;
    let stranger = Owner::app("inventory");
    assert!(query::get(&c, &stranger, task.id).await.unwrap().is_none());
    assert!(tasklane::store::cancel::cancel(&c, &stranger, task.id)
        .await
        .unwrap()
        .is_none());
    let other_scope = Owner {
        app: APP.into(),
        scope_id: Some("someone-else".into()),
    };
    assert!(query::get(&c, &other_scope, task.id)
        .await
        .unwrap()
        .is_none());
    assert_eq!(get(&c, task.id).await.state, TaskState::Queued);
}

#[tokio::test]
async fn stale_worker_is_fenced_after_reclaim() {
    let db = common::test_db().await;
    let c = db.client().await;
    let task = submit(&c, "k", serde_json::json!({})).await;
    let first = claim_one(&c).await;
    expire_lease(&c, task.id).await;
    rescue_expired(&c).await;
    let second = claim_one(&c).await;
    assert_eq!(second.id, task.id);
    assert_ne!(second.lease_token, first.lease_token);
    let events_before = event_types(&c, task.id).await;

    let beat = Beat {
        progress: Some(50),
        ..Default::default()
    };
    assert!(matches!(
        lease::heartbeat(&c, first.id, first.lease_token, &beat).await,
        Err(LeaseError::Lost)
    ));
    let success = Success {
        result: serde_json::json!("stale"),
        ..Default::default()
    };
    assert!(matches!(
        lease::complete(&c, first.id, first.lease_token, &success).await,
        Err(LeaseError::Lost)
    ));

    let now = get(&c, task.id).await;
    assert_eq!(
        (now.state, now.result.clone(), now.progress),
        (TaskState::Running, None, None)
    );
    assert_eq!(event_types(&c, task.id).await, events_before);
    // The current holder still completes normally.
    let fresh = Success {
        result: serde_json::json!("fresh"),
        ..Default::default()
    };
    lease::complete(&c, second.id, second.lease_token, &fresh)
        .await
        .unwrap();
    assert_eq!(
        get(&c, task.id).await.result,
        Some(serde_json::json!("fresh"))
    );
}

#[tokio::test]
async fn deleted_task_reports_gone_not_lost() {
    let db = common::test_db().await;
    let c = db.client().await;
    let task = submit(&c, "k", serde_json::json!({})).await;
    let claimed = claim_one(&c).await;
    c.execute("DELETE FROM tasklane.tasks WHERE id = $1", &[&task.id])
        .await
        .unwrap();
    let result = lease::heartbeat(&c, claimed.id, claimed.lease_token, &Beat::default()).await;
    assert!(matches!(result, Err(LeaseError::Gone)));
    let success = Success {
        result: serde_json::json!(1),
        ..Default::default()
    };
    assert!(matches!(
        lease::complete(&c, claimed.id, claimed.lease_token, &success).await,
        Err(LeaseError::Gone)
    ));
    let count: i64 = c
        .query_one("SELECT count(*) FROM tasklane.tasks", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 0, "a late write recreates nothing");
}

#[tokio::test]
async fn heartbeat_records_progress_snapshot_and_worker_events_in_order() {
    let db = common::test_db().await;
    let c = db.client().await;
    let task = submit(&c, "k", serde_json::json!({})).await;
    let claimed = claim_one(&c).await;
    let beat = Beat {
        progress: Some(40),
        phase: Some("running".into()),
        snapshot: Some(serde_json::json!({"page": 4})),
        events: vec![
            serde_json::json!({"type": "task.output", "data": {"text": "a"}}),
            serde_json::json!({"type": "task.output", "data": {"text": "b"}}),
        ],
    };
    let answer = lease::heartbeat(&c, claimed.id, claimed.lease_token, &beat)
        .await
        .unwrap();
    assert!(!answer.cancel_requested);
    let view = get(&c, task.id).await;
    assert_eq!(
        (view.progress, view.phase.as_deref()),
        (Some(40), Some("running"))
    );
    let events = tasklane::store::events::after(&c, task.id, 0, 100)
        .await
        .unwrap();
    let seqs: Vec<i32> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![1, 2, 3, 4, 5]);
    assert_eq!(events[2].kind, "task.progress");
    assert_eq!(events[4].data, serde_json::json!({"text": "b"}));
    // Events after a seq, bounded.
    let page = tasklane::store::events::after(&c, task.id, 3, 1)
        .await
        .unwrap();
    assert_eq!(page.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![4]);
}

#[tokio::test]
async fn queue_deadline_fails_closed_and_is_never_claimed() {
    let db = common::test_db().await;
    let c = db.client().await;
    let task = submit_with(&c, "k", serde_json::json!({}), |r| {
        r.deadline_seconds = Some(60)
    })
    .await;
    c.execute(
        "UPDATE tasklane.tasks SET deadline_at = now() - interval '1 second' WHERE id = $1",
        &[&task.id],
    )
    .await
    .unwrap();
    assert!(
        claim(&c, 10).await.is_empty(),
        "a task past its deadline is never claimed"
    );
    let expired = tasklane::store::recover::expire_deadlines(&c, 100, None)
        .await
        .unwrap();
    assert_eq!(expired, 1);
    let done = get(&c, task.id).await;
    assert_eq!(
        (done.state, done.error_code.as_deref()),
        (TaskState::Failed, Some("queue_deadline_exceeded"))
    );
    assert_eq!(
        event_types(&c, task.id).await,
        vec!["task.queued", "task.failed"]
    );
}

#[tokio::test]
async fn claim_prefers_priority_then_age_and_respects_run_at() {
    let db = common::test_db().await;
    let c = db.client().await;
    let low = submit_with(&c, "low", serde_json::json!({}), |r| r.priority = Some(-5)).await;
    let old = submit(&c, "old", serde_json::json!({})).await;
    let new = submit(&c, "new", serde_json::json!({})).await;
    let high = submit_with(&c, "high", serde_json::json!({}), |r| {
        r.priority = Some(100)
    })
    .await;
    let later = submit(&c, "later", serde_json::json!({})).await;
    c.execute(
        "UPDATE tasklane.tasks SET run_at = now() + interval '1 hour' WHERE id = $1",
        &[&later.id],
    )
    .await
    .unwrap();
    let order: Vec<_> = claim(&c, 10).await.into_iter().map(|t| t.id).collect();
    assert_eq!(order, vec![high.id, old.id, new.id, low.id]);
}

/// A claim of several types scans each type in claim order and merges them: priority,
/// then each type's turns from its first in the claim, the older task at the same
/// distance, up to its limit; a paused type is left.
#[tokio::test]
async fn a_claim_of_several_types_merges_them_in_claim_order() {
    let db = common::test_db().await;
    let c = db.client().await;
    let insert = |task_type: &str, key: &str, priority: i16, age: i32| {
        format!(
            "INSERT INTO tasklane.tasks (id, app, scope_id, effect_key, task_type, \
               request_digest, input, priority, max_attempts, on_restart, privacy, \
               lease_seconds, attempt_timeout_seconds, event_seq, run_at, created_at) \
             VALUES (tasklane.uuid_v7(), '{APP}', '{SCOPE}', '{key}', '{task_type}', '\\x00', \
               '{{}}', {priority}, 3, 'retry', 'local_only', 30, 300, 1, \
               now() - interval '{age} s', now() - interval '{age} s');"
        )
    };
    let rows = [
        ("a", "a-low-old", 0, 30),
        ("b", "b-high", 5, 1),
        ("a", "a-high-new", 5, 0),
        ("b", "b-low-older", 0, 40),
        ("paused", "p-highest", 9, 50),
    ];
    for (task_type, key, priority, age) in rows {
        c.batch_execute(&insert(task_type, key, priority, age))
            .await
            .unwrap();
    }
    c.batch_execute("INSERT INTO tasklane.paused_task_types (task_type) VALUES ('paused')")
        .await
        .unwrap();
    let types = ["a", "b", "paused", "a"].map(String::from);
    let claimant = claimant(tasklane::task::Locality::Local);
    let first = tasklane::store::claim::claim(&c, &claimant, &types, 3)
        .await
        .unwrap();
    assert_eq!(
        effect_keys(&c, &first).await,
        ["b-high", "a-high-new", "b-low-older"]
    );
    let rest = tasklane::store::claim::claim(&c, &claimant, &types, 10)
        .await
        .unwrap();
    assert_eq!(
        effect_keys(&c, &rest).await,
        ["a-low-old"],
        "the paused type is left"
    );
}

async fn effect_keys(
    c: &tokio_postgres::Client,
    claimed: &[tasklane::task::claim::ClaimedTask],
) -> Vec<String> {
    let ids: Vec<uuid::Uuid> = claimed.iter().map(|t| t.id).collect();
    let rows = c
        .query(
            "SELECT t.effect_key FROM unnest($1::uuid[]) WITH ORDINALITY AS x(id, n) \
             JOIN tasklane.tasks t ON t.id = x.id ORDER BY x.n",
            &[&ids],
        )
        .await
        .unwrap();
    rows.iter().map(|row| row.get(0)).collect()
}

#[tokio::test]
async fn unregistered_types_are_never_claimed() {
    let db = common::test_db().await;
    let c = db.client().await;
    submit(&c, "k", serde_json::json!({})).await;
    let claimant = claimant(tasklane::task::Locality::Local);
    let other = vec!["something-else".to_owned()];
    assert!(tasklane::store::claim::claim(&c, &claimant, &other, 10)
        .await
        .unwrap()
        .is_empty());
}
