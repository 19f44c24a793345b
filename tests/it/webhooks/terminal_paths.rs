//! Every path into a terminal state writes exactly one notification per subscribed
//! endpoint, in the transition's own transaction: none for a rolled-back transition,
//! none for an unsubscribed event, a disabled endpoint or another app's endpoint; and
//! owner deletion takes the undelivered ones away.

use crate::common;

use common::fixtures::*;
use tasklane::store::lease;
use tasklane::store::recover::{self, Lost};
use tasklane::store::webhooks;
use tasklane::task::owner::Owner;
use tasklane::task::settlement::Report;
use tasklane::task::settlement::Success;
use tasklane::task::{Privacy, RestartPolicy, TaskState};
use tokio_postgres::Client;
use uuid::Uuid;

const ALL: [&str; 3] = ["task.succeeded", "task.failed", "task.cancelled"];

/// Registers `app`'s endpoint `name` for `events`; its id.
async fn endpoint(c: &Client, app: &str, name: &str, events: &[&str]) -> Uuid {
    let events: Vec<String> = events.iter().map(|e| e.to_string()).collect();
    webhooks::upsert(c, app, name, "http://127.0.0.1:9/", &events)
        .await
        .unwrap()
        .id
}

/// (endpoint, event) of every notification about `task`.
async fn notifications(c: &Client, task: Uuid) -> Vec<(Uuid, String)> {
    let rows = c
        .query(
            "SELECT endpoint_id, event FROM tasklane.webhook_deliveries
             WHERE task_id = $1 ORDER BY endpoint_id, id",
            &[&task],
        )
        .await
        .unwrap();
    rows.iter().map(|r| (r.get(0), r.get(1))).collect()
}

fn error(retryable: bool) -> Report {
    Report::Error {
        code: "x".into(),
        message: "boom".into(),
        retryable,
        retry_after: None,
    }
}

#[tokio::test]
async fn every_terminal_path_notifies_each_subscribed_endpoint_once() {
    let db = common::test_db().await;
    let mut c = db.client().await;
    let all = endpoint(&c, APP, "all", &ALL).await;
    let failures = endpoint(&c, APP, "failures", &["task.failed"]).await;
    let off = endpoint(&c, APP, "off", &ALL).await;
    c.execute(
        "UPDATE tasklane.webhook_endpoints SET disabled = true WHERE id = $1",
        &[&off],
    )
    .await
    .unwrap();
    endpoint(&c, "other-app", "all", &ALL).await;
    let owner = Owner::app(APP);
    let mut expected: Vec<(Uuid, &str)> = Vec::new();

    // A worker completes.
    let t = submit(&c, "succeeded", serde_json::json!({})).await;
    let claimed = claim_one(&c).await;
    lease::complete(&c, claimed.id, claimed.lease_token, &Success::default())
        .await
        .unwrap();
    expected.push((t.id, "task.succeeded"));

    // A batch of completions (group commit).
    let t = submit(&c, "grouped", serde_json::json!({})).await;
    let claimed = claim_one(&c).await;
    let batch = [tasklane::task::settlement::Completion {
        id: claimed.id,
        lease_token: claimed.lease_token,
        success: Success::default(),
    }];
    let object = db.pool.get().await.unwrap();
    let answers = tasklane::store::complete_many::complete_many(&object, &batch, None)
        .await
        .unwrap()
        .answers;
    assert!(answers[0].is_ok());
    expected.push((t.id, "task.succeeded"));

    // A permanent error.
    let t = submit(&c, "permanent", serde_json::json!({})).await;
    let claimed = claim_one(&c).await;
    lease::settle(
        &mut c,
        claimed.id,
        claimed.lease_token,
        error(false),
        &fast_backoff(),
    )
    .await
    .unwrap();
    expected.push((t.id, "task.failed"));

    // Retryable errors until the attempts run out: one notification, at the end.
    let t = submit_with(&c, "exhausted", serde_json::json!({}), |r| {
        r.max_attempts = Some(2)
    })
    .await;
    let claimed = claim_one(&c).await;
    lease::settle(
        &mut c,
        claimed.id,
        claimed.lease_token,
        error(true),
        &fast_backoff(),
    )
    .await
    .unwrap();
    assert!(
        notifications(&c, t.id).await.is_empty(),
        "waiting is not terminal"
    );
    make_due(&c, t.id).await;
    let claimed = claim_one(&c).await;
    lease::settle(
        &mut c,
        claimed.id,
        claimed.lease_token,
        error(true),
        &fast_backoff(),
    )
    .await
    .unwrap();
    expected.push((t.id, "task.failed"));

    // A fallback the task's privacy does not allow.
    let t = submit_with(&c, "fallback", serde_json::json!({}), |r| {
        r.privacy = Some(Privacy::LocalOnly)
    })
    .await;
    let claimed = claim_one(&c).await;
    let fallback = Report::Fallback {
        reason: "no local model".into(),
    };
    lease::settle(
        &mut c,
        claimed.id,
        claimed.lease_token,
        fallback,
        &fast_backoff(),
    )
    .await
    .unwrap();
    expected.push((t.id, "task.failed"));

    // Cancel of a queued task.
    let t = submit(&c, "cancel-queued", serde_json::json!({})).await;
    tasklane::store::cancel::cancel(&c, &owner, t.id)
        .await
        .unwrap();
    expected.push((t.id, "task.cancelled"));

    // Cancel of a running task, acknowledged by its worker: one notification, at the end.
    let t = submit(&c, "cancel-running", serde_json::json!({})).await;
    let claimed = claim_one(&c).await;
    tasklane::store::cancel::cancel(&c, &owner, t.id)
        .await
        .unwrap();
    assert!(
        notifications(&c, t.id).await.is_empty(),
        "cancelling is not terminal"
    );
    lease::settle(
        &mut c,
        claimed.id,
        claimed.lease_token,
        Report::Cancelled,
        &fast_backoff(),
    )
    .await
    .unwrap();
    expected.push((t.id, "task.cancelled"));

    // The queue-deadline sweep.
    let t = submit_with(&c, "deadline", serde_json::json!({}), |r| {
        r.deadline_seconds = Some(60)
    })
    .await;
    c.execute(
        "UPDATE tasklane.tasks SET deadline_at = now() - interval '1 second' WHERE id = $1",
        &[&t.id],
    )
    .await
    .unwrap();
    assert_eq!(recover::expire_deadlines(&c, 100, None).await.unwrap(), 1);
    expected.push((t.id, "task.failed"));

    // The rescuer: a lost worker, policy fail.
    let t = submit_with(&c, "rescued", serde_json::json!({}), |r| {
        r.on_restart = Some(RestartPolicy::Fail)
    })
    .await;
    claim_one(&c).await;
    expire_lease(&c, t.id).await;
    assert_eq!(rescue_expired(&c).await, 1);
    expected.push((t.id, "task.failed"));

    // The rescuer: a lost worker, policy retry, past its attempts.
    let t = submit_with(&c, "rescued-exhausted", serde_json::json!({}), |r| {
        r.max_attempts = Some(1);
        r.on_restart = Some(RestartPolicy::Retry)
    })
    .await;
    claim_one(&c).await;
    expire_lease(&c, t.id).await;
    assert_eq!(rescue_expired(&c).await, 1);
    expected.push((t.id, "task.failed"));

    // A cancelling task whose lease runs out.
    let t = submit(&c, "cancelling-lost", serde_json::json!({})).await;
    claim_one(&c).await;
    tasklane::store::cancel::cancel(&c, &owner, t.id)
        .await
        .unwrap();
    expire_lease(&c, t.id).await;
    assert_eq!(rescue_expired(&c).await, 1);
    expected.push((t.id, "task.cancelled"));

    // A cold start: a queued task whose policy is fail.
    let t = submit_with(&c, "cold", serde_json::json!({}), |r| {
        r.on_restart = Some(RestartPolicy::Fail)
    })
    .await;
    c.batch_execute("BEGIN").await.unwrap();
    let replica_id = Uuid::now_v7();
    recover::recover(&c, &Lost::ColdStart { replica_id }, 100)
        .await
        .unwrap();
    c.batch_execute("COMMIT").await.unwrap();
    assert_eq!(get(&c, t.id).await.state, TaskState::Failed);
    expected.push((t.id, "task.failed"));

    for (task, event) in &expected {
        let mut wanted = vec![(all, event.to_string())];
        if *event == "task.failed" {
            wanted.push((failures, event.to_string()));
        }
        wanted.sort();
        assert_eq!(
            notifications(&c, *task).await,
            wanted,
            "task {task} ({event})"
        );
    }
    let total = count(&c, "SELECT count(*) FROM tasklane.webhook_deliveries").await;
    assert_eq!(
        total as usize,
        notifications_expected(&expected),
        "nothing else was written"
    );
}

fn notifications_expected(expected: &[(Uuid, &str)]) -> usize {
    expected
        .iter()
        .map(|(_, e)| if *e == "task.failed" { 2 } else { 1 })
        .sum()
}

#[tokio::test]
async fn a_rolled_back_transition_leaves_no_notification_and_a_retry_notifies_again() {
    let db = common::test_db().await;
    let c = db.client().await;
    let all = endpoint(&c, APP, "all", &ALL).await;
    let t = submit(&c, "k", serde_json::json!({})).await;
    let claimed = claim_one(&c).await;
    c.batch_execute("BEGIN").await.unwrap();
    lease::complete(&c, claimed.id, claimed.lease_token, &Success::default())
        .await
        .unwrap();
    assert_eq!(
        notifications(&c, t.id).await.len(),
        1,
        "written in the transaction"
    );
    c.batch_execute("ROLLBACK").await.unwrap();
    assert!(notifications(&c, t.id).await.is_empty());

    // Cancelled, retried, cancelled again: two transitions, two notifications.
    let owner = Owner::app(APP);
    let t = submit(&c, "again", serde_json::json!({})).await;
    tasklane::store::cancel::cancel(&c, &owner, t.id)
        .await
        .unwrap();
    let service = common::service::tasklane(db.pool.clone(), [task_type()]);
    service.retry(&owner, t.id).await.unwrap();
    tasklane::store::cancel::cancel(&c, &owner, t.id)
        .await
        .unwrap();
    let seen = notifications(&c, t.id).await;
    assert_eq!(
        seen,
        vec![
            (all, "task.cancelled".into()),
            (all, "task.cancelled".into())
        ]
    );
    let distinct = count(
        &c,
        &format!(
            "SELECT count(DISTINCT id) FROM tasklane.webhook_deliveries WHERE task_id = '{}'",
            t.id
        ),
    )
    .await;
    assert_eq!(distinct, 2, "each notification has its own webhook-id");
}

#[tokio::test]
async fn owner_deletion_removes_undelivered_notifications_and_keeps_the_log() {
    let db = common::test_db().await;
    let c = db.client().await;
    endpoint(&c, APP, "all", &ALL).await;
    let owner = Owner::app(APP);
    let delivered = submit(&c, "delivered", serde_json::json!({})).await;
    let pending = submit(&c, "pending", serde_json::json!({})).await;
    let other = submit_with(&c, "other-scope", serde_json::json!({}), |r| {
        r.scope_id = "mailbox-8".into()
    })
    .await;
    for t in [&delivered, &pending, &other] {
        tasklane::store::cancel::cancel(&c, &owner, t.id)
            .await
            .unwrap();
    }
    c.execute(
        "UPDATE tasklane.webhook_deliveries SET status = 'delivered', finished_at = now()
         WHERE task_id = $1",
        &[&delivered.id],
    )
    .await
    .unwrap();
    let deleted = tasklane::store::lifecycle::delete(&c, APP, SCOPE, None, false)
        .await
        .unwrap();
    assert_eq!(deleted, 2);
    assert!(
        notifications(&c, pending.id).await.is_empty(),
        "undelivered: gone"
    );
    assert_eq!(
        notifications(&c, delivered.id).await.len(),
        1,
        "the log row stays"
    );
    assert_eq!(
        notifications(&c, other.id).await.len(),
        1,
        "another scope: untouched"
    );
}
