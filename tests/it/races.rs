//! Races with real concurrency: many connections submitting one identity, and the
//! owner's cancel racing the worker's settlement.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::fixtures::*;
use tasklane::service::ServiceError;
use tasklane::store::lease;
use tasklane::task::owner::Owner;
use tasklane::task::record::SubmitOutcome;
use tasklane::task::settlement::Success;
use tasklane::task::TaskState;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_submits_of_one_identity_make_one_task() {
    let db = common::test_db().await;
    let pool = common::pool(&db.url, 50);
    let barrier = Arc::new(tokio::sync::Barrier::new(50));
    let mut handles = Vec::new();
    for _ in 0..50 {
        let pool = pool.clone();
        let barrier = barrier.clone();
        handles.push(tokio::spawn(async move {
            let object = pool.get().await.unwrap();
            let client: &tokio_postgres::Client = &object;
            barrier.wait().await;
            try_submit(client, &request("same", serde_json::json!({"doc": 1})))
                .await
                .unwrap()
        }));
    }
    let mut ids = std::collections::HashSet::new();
    let mut created = 0;
    for handle in handles {
        let submitted = handle.await.unwrap();
        ids.insert(submitted.task.id);
        if submitted.outcome == SubmitOutcome::Created {
            created += 1;
        }
    }
    assert_eq!((ids.len(), created), (1, 1));
    let c = db.client().await;
    let count: i64 = c
        .query_one("SELECT count(*) FROM tasklane.tasks", &[])
        .await
        .unwrap()
        .get(0);
    let events: i64 = c
        .query_one("SELECT count(*) FROM tasklane.task_events", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!((count, events), (1, 1));

    // Another request under the same identity is a conflict and changes nothing.
    let other = try_submit(&c, &request("same", serde_json::json!({"doc": 2}))).await;
    assert!(matches!(other, Err(ServiceError::IdempotencyConflict)));
    let count: i64 = c
        .query_one("SELECT count(*) FROM tasklane.tasks", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 1);
}

/// A repeat whose identity probe runs before the first submit of its identity commits,
/// and whose identity lock is taken after, finds that lock free. With the one capacity
/// slot held by the first task, admission refused it (V29 fixed this); it must join that
/// task. The owner lock makes the interleaving exact: a waiting exclusive request (as a
/// scope deletion takes) queues the repeat's shared request, after its probe, until the
/// first submit has committed.
#[tokio::test]
async fn a_repeat_whose_first_submit_committed_meanwhile_joins_it() {
    let db = common::test_db().await;
    let first = db.client().await;
    let blocker = db.client().await;
    let repeat = db.client().await;
    let probe = db.client().await;
    capacity_limit(&probe, "vip", 1).await;
    let mut r = request("once", serde_json::json!({"doc": 1}));
    r.usage_subject = Some("vip".into());
    let task = r.resolve(APP, &task_type(), 1 << 20).unwrap();

    first.batch_execute("BEGIN").await.unwrap();
    let created = tasklane::service::submit_in(&first, &task).await.unwrap();
    assert_eq!(created.outcome, SubmitOutcome::Created);
    let owner_lock = "SELECT pg_advisory_lock(tasklane.owner_key($1, $2))";
    let blocked = tokio::spawn(async move {
        blocker.execute(owner_lock, &[&APP, &SCOPE]).await.unwrap();
        blocker
    });
    let waiting = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
                   AND database = (SELECT oid FROM pg_database WHERE datname = current_database())";
    common::eventually(
        Duration::from_secs(10),
        "the exclusive owner lock to wait for the first submit",
        || async { count(&probe, waiting).await == 1 },
    )
    .await;
    let repeated = tokio::spawn(async move { try_submit(&repeat, &r).await });
    common::eventually(
        Duration::from_secs(10),
        "the repeat to queue behind it, after its probe",
        || async { count(&probe, waiting).await == 2 },
    )
    .await;
    first.batch_execute("COMMIT").await.unwrap();
    let blocker = blocked.await.unwrap();
    blocker
        .execute(
            "SELECT pg_advisory_unlock(tasklane.owner_key($1, $2))",
            &[&APP, &SCOPE],
        )
        .await
        .unwrap();
    let joined = repeated
        .await
        .unwrap()
        .expect("the repeat joins the task that holds the slot");
    assert_eq!(
        (joined.task.id, joined.outcome),
        (created.task.id, SubmitOutcome::Joined)
    );
    assert_eq!(
        count(&probe, "SELECT count(*) FROM tasklane.capacity_slots").await,
        1,
        "the repeat took no slot"
    );
}

#[tokio::test]
async fn a_succeeded_task_is_replayed_with_its_result() {
    let db = common::test_db().await;
    let c = db.client().await;
    let task = submit(&c, "once", serde_json::json!({"doc": 1})).await;
    let claimed = claim_one(&c).await;
    let success = Success {
        result: serde_json::json!({"summary": "short"}),
        ..Default::default()
    };
    lease::complete(&c, claimed.id, claimed.lease_token, &success)
        .await
        .unwrap();
    let replay = try_submit(&c, &request("once", serde_json::json!({"doc": 1})))
        .await
        .unwrap();
    assert_eq!(replay.outcome, SubmitOutcome::Existing);
    assert_eq!(replay.task.id, task.id);
    assert_eq!(
        replay.task.result,
        Some(serde_json::json!({"summary": "short"}))
    );
    assert_eq!(
        event_types(&c, task.id).await.len(),
        3,
        "a replay writes nothing"
    );
    // A different usage subject is a different identity.
    let other = try_submit(&c, &{
        let mut r = request("once", serde_json::json!({"doc": 1}));
        r.usage_subject = Some("user-9".into());
        r
    })
    .await
    .unwrap();
    assert_eq!(other.outcome, SubmitOutcome::Created);
    assert_ne!(other.task.id, task.id);
}

/// The owner's cancel and the worker's completion race; exactly one terminal state
/// results, and its event is the last one.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancel_versus_finish_has_one_winner_a_thousand_times() {
    let db = common::test_db().await;
    let owner_conn = db.client().await;
    let worker_conn = db.client().await;
    let setup = db.client().await;
    let owner = Owner::app(APP);
    let mut outcomes = std::collections::HashMap::new();
    for round in 0..1000 {
        submit(&setup, &format!("race-{round}"), serde_json::json!({})).await;
        let claimed = claim_one(&setup).await;
        let cancel = tasklane::store::cancel::cancel(&owner_conn, &owner, claimed.id);
        let success = Success {
            result: serde_json::json!(round),
            ..Default::default()
        };
        let complete = lease::complete(&worker_conn, claimed.id, claimed.lease_token, &success);
        let (cancel, complete) = tokio::join!(cancel, complete);
        cancel.unwrap();
        // Whether cancel marked it cancelling first or not, the completion settles it:
        // the work is done (docs/architecture.md, "a cancelled task that completes anyway").
        complete.unwrap();
        let view = get(&setup, claimed.id).await;
        let events = event_types(&setup, claimed.id).await;
        assert_eq!(
            events.last().unwrap(),
            &view.state.event_type(),
            "round {round}: {events:?}"
        );
        assert_eq!(view.state, TaskState::Succeeded, "round {round}");
        // Whichever order: at most one cancelling event, and nothing after the terminal one.
        let terminal = events
            .iter()
            .filter(|e| ["task.succeeded", "task.cancelled", "task.failed"].contains(&e.as_str()))
            .count();
        assert_eq!(terminal, 1);
    }
    // Cancel against a permanent failure: whichever takes the row first decides, and
    // the other changes nothing.
    for round in 0..200 {
        submit(&setup, &format!("race-fail-{round}"), serde_json::json!({})).await;
        let claimed = claim_one(&setup).await;
        let cancel = tasklane::store::cancel::cancel(&owner_conn, &owner, claimed.id);
        let mut worker = db.client().await;
        let report = tasklane::task::settlement::Report::Error {
            code: "x".into(),
            message: "m".into(),
            retryable: false,
            retry_after: None,
        };
        let backoff = fast_backoff();
        let fail = lease::settle(
            &mut worker,
            claimed.id,
            claimed.lease_token,
            report,
            &backoff,
        );
        let (cancel, fail) = tokio::join!(cancel, fail);
        cancel.unwrap();
        fail.unwrap();
        let view = get(&setup, claimed.id).await;
        let events = event_types(&setup, claimed.id).await;
        assert_eq!(events.last().unwrap(), &view.state.event_type());
        assert!(
            matches!(view.state, TaskState::Failed | TaskState::Cancelled),
            "{:?}",
            view.state
        );
        *outcomes.entry(view.state).or_insert(0) += 1;
    }
    assert_eq!(outcomes.values().sum::<i32>(), 200);
}

/// Owner and identity lock keys are a protocol between replicas (and the SQL API):
/// replicas of two versions running side by side during a rollout must take the same
/// keys for the same owner and identity, or submits and deletions stop serializing.
/// V5 rewrote both functions (to let PostgreSQL inline them); their values are pinned
/// here and checked against V1's and V3's formulas.
#[tokio::test]
async fn lock_keys_keep_their_values_across_schema_versions() {
    let db = common::test_db().await;
    let c = db.client().await;
    let pinned = c
        .query_one(
            "SELECT tasklane.owner_key('a', 'b'), tasklane.identity_key('a', 'b', 'c', NULL), \
                    tasklane.identity_key('a', 'b', 'c', 'd')",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(pinned.get::<_, i64>(0), -1131286493374536035);
    assert_eq!(pinned.get::<_, Vec<i32>>(1), vec![-730765003, 171862581]);
    assert_eq!(pinned.get::<_, Vec<i32>>(2), vec![474540208, 1931783789]);
    let v3_identity = "SELECT ARRAY[('x' || substr(h, 1, 8))::bit(32)::integer, \
                              ('x' || substr(h, 9, 8))::bit(32)::integer] \
         FROM (SELECT encode(sha256(convert_to(concat_ws(chr(31), $1::text, $2::text, $3::text, \
                   coalesce(chr(30) || $4::text, '')), 'UTF8')), 'hex') AS h) d";
    let v1_owner =
        "SELECT ('x' || substr(encode(sha256(convert_to($1::text || chr(31) || $2::text, \
                    'UTF8')), 'hex'), 1, 16))::bit(64)::bigint";
    for (app, scope, key, subject) in [
        ("app", "scope", "key", None),
        ("app", "scope", "key", Some("")),
        ("app", "scope", "key", Some("user-7")),
        ("appé", "scöpe/1", "k\u{1f600}", Some("sübject")),
        ("", "", "", None),
    ] {
        let old: Vec<i32> = c
            .query_one(v3_identity, &[&app, &scope, &key, &subject])
            .await
            .unwrap()
            .get(0);
        let new: Vec<i32> = c
            .query_one(
                "SELECT tasklane.identity_key($1, $2, $3, $4)",
                &[&app, &scope, &key, &subject],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(
            old, new,
            "identity_key({app:?}, {scope:?}, {key:?}, {subject:?})"
        );
        let old: i64 = c.query_one(v1_owner, &[&app, &scope]).await.unwrap().get(0);
        let new: i64 = c
            .query_one("SELECT tasklane.owner_key($1, $2)", &[&app, &scope])
            .await
            .unwrap()
            .get(0);
        assert_eq!(old, new, "owner_key({app:?}, {scope:?})");
    }
}
