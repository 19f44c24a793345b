//! Release: true for a task in any state, false when absent; the first released_at is
//! kept; a task in flight keeps running; a rolled-back release leaves nothing.

use tasklane::store::lease;

use tasklane::task::lease::Beat;

use tasklane::store::lifecycle;
use tasklane::task::settlement::Success;
use tasklane::task::TaskState;

use super::support::*;
use crate::common::fixtures::{self, APP, SCOPE};

#[tokio::test]
async fn release_answers_for_every_state_and_absent_identities() {
    let db = crate::common::test_db().await;
    let c = db.client().await;
    let queued = submit_at(&c, At::scope(SCOPE), "queued").await;
    assert!(lifecycle::release(&c, APP, SCOPE, "queued", None)
        .await
        .unwrap()
        .is_some());
    assert_eq!(fixtures::get(&c, queued.id).await.state, TaskState::Queued);
    for state in ["succeeded", "failed", "cancelled", "waiting_for_retry"] {
        let task = submit_at(&c, At::scope(SCOPE), state).await;
        place(&c, task.id, state, None, None).await;
        assert!(
            lifecycle::release(&c, APP, SCOPE, state, None)
                .await
                .unwrap()
                .is_some(),
            "{state}"
        );
    }
    assert_eq!(
        lifecycle::release(&c, APP, SCOPE, "absent", None)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        lifecycle::release(&c, APP, "other-scope", "queued", None)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        lifecycle::release(&c, "other-app", SCOPE, "queued", None)
            .await
            .unwrap(),
        None
    );
    // Through SQL, as an application calls it.
    let sql = "SELECT tasklane.release_task($1, $2, $3, $4)";
    let row = c
        .query_one(sql, &[&APP, &SCOPE, &"queued", &None::<String>])
        .await
        .unwrap();
    assert!(row.get::<_, bool>(0));
    let row = c
        .query_one(sql, &[&APP, &SCOPE, &"absent", &None::<String>])
        .await
        .unwrap();
    assert!(!row.get::<_, bool>(0));
    assert_no_advisory_locks(&db).await;
}

#[tokio::test]
async fn usage_subject_is_part_of_the_identity() {
    let db = crate::common::test_db().await;
    let c = db.client().await;
    fixtures::submit_with(&c, "k", serde_json::json!({}), |r| {
        r.usage_subject = Some("user-9".into())
    })
    .await;
    assert_eq!(
        lifecycle::release(&c, APP, SCOPE, "k", None).await.unwrap(),
        None
    );
    assert!(lifecycle::release(&c, APP, SCOPE, "k", Some("user-9"))
        .await
        .unwrap()
        .is_some());
    assert_eq!(
        lifecycle::release(&c, APP, SCOPE, "k", Some("user-8"))
            .await
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn a_repeated_release_keeps_the_first_time() {
    let db = crate::common::test_db().await;
    let c = db.client().await;
    let task = submit_at(&c, At::scope(SCOPE), "k").await;
    let first = lifecycle::release(&c, APP, SCOPE, "k", None)
        .await
        .unwrap()
        .unwrap();
    // Each call is its own transaction, so now() moves on between them.
    let second = lifecycle::release(&c, APP, SCOPE, "k", None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first, second);
    assert_eq!(fixtures::get(&c, task.id).await.released_at, Some(first));
}

#[tokio::test]
async fn a_rolled_back_release_leaves_nothing_released() {
    let db = crate::common::test_db().await;
    let mut c = db.client().await;
    let task = submit_at(&c, At::scope(SCOPE), "k").await;
    {
        let tx = c.transaction().await.unwrap();
        assert!(lifecycle::release(&tx, APP, SCOPE, "k", None)
            .await
            .unwrap()
            .is_some());
        tx.rollback().await.unwrap();
    }
    assert_eq!(fixtures::get(&c, task.id).await.released_at, None);
    // The same through SQL in the application's own transaction.
    c.batch_execute(
        "BEGIN; SELECT tasklane.release_task('mail', 'mailbox-7', 'k', NULL); ROLLBACK",
    )
    .await
    .unwrap();
    assert_eq!(fixtures::get(&c, task.id).await.released_at, None);
    // Committed, it sticks.
    let tx = c.transaction().await.unwrap();
    lifecycle::release(&tx, APP, SCOPE, "k", None)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert!(fixtures::get(&c, task.id).await.released_at.is_some());
}

#[tokio::test]
async fn releasing_a_running_task_neither_cancels_nor_disturbs_it() {
    let db = crate::common::test_db().await;
    let c = db.client().await;
    let task = submit_at(&c, At::scope(SCOPE), "k").await;
    let claimed = fixtures::claim_one(&c).await;
    let released = lifecycle::release(&c, APP, SCOPE, "k", None)
        .await
        .unwrap()
        .unwrap();
    let answer = lease::heartbeat(&c, claimed.id, claimed.lease_token, &Beat::default())
        .await
        .unwrap();
    assert!(!answer.cancel_requested);
    assert_eq!(fixtures::get(&c, task.id).await.state, TaskState::Running);
    let success = Success {
        result: serde_json::json!(1),
        ..Default::default()
    };
    lease::complete(&c, claimed.id, claimed.lease_token, &success)
        .await
        .unwrap();
    let done = fixtures::get(&c, task.id).await;
    assert_eq!(
        (done.state, done.released_at),
        (TaskState::Succeeded, Some(released))
    );
    // Release writes no event.
    assert_eq!(
        fixtures::event_types(&c, task.id).await,
        vec!["task.queued", "task.running", "task.succeeded"]
    );
}
