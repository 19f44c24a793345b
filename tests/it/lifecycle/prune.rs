//! The pruning sweep: only terminal tasks released and finished longer ago than the
//! retention, at most N a pass, safe with several sweepers at once.

use std::time::Duration;

use chrono::{DateTime, Utc};
use tasklane::maintenance::pruner::{Pruner, DEFAULT_RETENTION};
use tasklane::store::prune::prune_tasks;
use tasklane::task::record::SubmitOutcome;
use tokio_util::sync::CancellationToken;

use super::support::*;
use crate::common::eventually;
use crate::common::fixtures::{self, SCOPE};

const DAY: Duration = DEFAULT_RETENTION;

#[tokio::test]
async fn the_retention_boundary_is_exact_to_the_minute() {
    let db = crate::common::test_db().await;
    let c = db.client().await;
    let mut ids = std::collections::HashMap::new();
    // (key, state, finished_at offset, released_at offset), offsets from the database's now().
    let layout = [
        (
            "both-past",
            "succeeded",
            Some("-24 hours -1 minute"),
            Some("-24 hours -1 minute"),
        ),
        (
            "both-inside",
            "failed",
            Some("-23 hours -59 minutes"),
            Some("-23 hours -59 minutes"),
        ),
        (
            "released-inside",
            "cancelled",
            Some("-30 days"),
            Some("-23 hours -59 minutes"),
        ),
        (
            "finished-inside",
            "succeeded",
            Some("-23 hours -59 minutes"),
            Some("-30 days"),
        ),
        ("unreleased", "succeeded", Some("-30 days"), None),
        ("unfinished", "running", Some("-30 days"), Some("-30 days")),
        (
            "waiting",
            "waiting_for_retry",
            Some("-30 days"),
            Some("-30 days"),
        ),
    ];
    for (key, state, finished, released) in layout {
        let task = submit_at(&c, At::scope(SCOPE), key).await;
        place(&c, task.id, state, finished, released).await;
        ids.insert(key, task.id);
    }
    assert_eq!(
        prune_tasks(&c, DAY, 100, None, None).await.unwrap().count,
        1
    );
    assert!(!exists(&c, ids["both-past"]).await);
    assert_eq!(
        events_of(&c, ids["both-past"]).await,
        0,
        "events go with their task"
    );
    for key in [
        "both-inside",
        "released-inside",
        "finished-inside",
        "unreleased",
        "unfinished",
        "waiting",
    ] {
        assert!(exists(&c, ids[key]).await, "{key} must be kept");
    }
    // Move the database clock two minutes on: the rows one minute inside are now one
    // minute past; the unreleased and unfinished ones stay however old.
    let now: DateTime<Utc> = c
        .query_one("SELECT now() + interval '2 minutes'", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        prune_tasks(&c, DAY, 100, Some(now), None)
            .await
            .unwrap()
            .count,
        3
    );
    for key in ["unreleased", "unfinished", "waiting"] {
        assert!(exists(&c, ids[key]).await, "{key} must be kept");
    }
    // A year on, still kept.
    let later: DateTime<Utc> = c
        .query_one("SELECT now() + interval '1 year'", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        prune_tasks(&c, DAY, 100, Some(later), None)
            .await
            .unwrap()
            .count,
        0
    );
    assert_no_advisory_locks(&db).await;
}

#[tokio::test]
async fn after_pruning_the_effect_key_no_longer_blocks_a_new_task() {
    let db = crate::common::test_db().await;
    let c = db.client().await;
    let old = submit_at(&c, At::scope(SCOPE), "k").await;
    run_to_success(&c).await;
    tasklane::store::lifecycle::release(&c, fixtures::APP, SCOPE, "k", None)
        .await
        .unwrap();
    // Before pruning, another request under the key is a conflict.
    let other = fixtures::request("k", serde_json::json!({"another": "request"}));
    assert!(fixtures::try_submit(&c, &other).await.is_err());
    place(
        &c,
        old.id,
        "succeeded",
        Some("-25 hours"),
        Some("-25 hours"),
    )
    .await;
    assert_eq!(
        prune_tasks(&c, DAY, 100, None, None).await.unwrap().count,
        1
    );
    let again = fixtures::try_submit(&c, &other).await.unwrap();
    assert_eq!(again.outcome, SubmitOutcome::Created);
    assert_ne!(again.task.id, old.id);
}

#[tokio::test]
async fn a_pass_from_a_start_leaves_what_was_released_before_it() {
    let db = crate::common::test_db().await;
    let c = db.client().await;
    let early = submit_at(&c, At::scope(SCOPE), "early").await;
    place(&c, early.id, "succeeded", Some("-3 days"), Some("-3 days")).await;
    let late = submit_at(&c, At::scope(SCOPE), "late").await;
    place(&c, late.id, "succeeded", Some("-2 days"), Some("-2 days")).await;
    let from: DateTime<Utc> = c
        .query_one("SELECT now() - interval '60 hours'", &[])
        .await
        .unwrap()
        .get(0);
    let pruned = prune_tasks(&c, DAY, 100, None, Some(from)).await.unwrap();
    assert_eq!(pruned.count, 1);
    assert!(pruned.reached.is_some_and(|at| at > from), "{pruned:?}");
    assert!(!exists(&c, late.id).await && exists(&c, early.id).await);
    // A pass from the start takes what the last one stepped over.
    let pruned = prune_tasks(&c, DAY, 100, None, None).await.unwrap();
    assert!(pruned.count == 1 && pruned.reached.is_some_and(|at| at < from));
    assert!(!exists(&c, early.id).await);
}

#[tokio::test]
async fn a_pass_never_deletes_more_than_its_batch() {
    let db = crate::common::test_db().await;
    let c = db.client().await;
    bulk_prunable(&c, "bulk", 250).await;
    let passes: Vec<u64> = {
        let mut passes = Vec::new();
        for _ in 0..4 {
            passes.push(prune_tasks(&c, DAY, 100, None, None).await.unwrap().count);
        }
        passes
    };
    assert_eq!(passes, vec![100, 100, 50, 0]);
    assert_eq!(
        count(&c, "SELECT count(*) FROM tasklane.task_events").await,
        0
    );
}

#[tokio::test]
async fn a_ten_thousand_row_backlog_drains_in_successive_passes() {
    let db = crate::common::test_db().await;
    let c = db.client().await;
    bulk_prunable(&c, "bulk", 10_000).await;
    let keep = submit_at(&c, At::scope(SCOPE), "unreleased").await;
    let pruner = Pruner {
        pool: db.pool.clone(),
        interval: Duration::from_secs(3600),
        spread: Default::default(),
        batch: 100,
        retention: DAY,
        instruments: tasklane::telemetry::Instruments::noop(),
        start: Default::default(),
        deliveries_start: Default::default(),
    };
    let mut full_passes = 0;
    while pruner.pass().await.unwrap() {
        full_passes += 1;
        assert!(full_passes <= 100, "a pass deleted more than its batch");
    }
    assert_eq!(full_passes, 100);
    assert_eq!(count(&c, "SELECT count(*) FROM tasklane.tasks").await, 1);
    assert!(exists(&c, keep.id).await);
    assert_eq!(count(&c, "SELECT count(*) FROM tasklane.task_events WHERE task_id <> (SELECT id FROM tasklane.tasks)").await, 0);
}

#[tokio::test]
async fn the_service_keeps_going_while_passes_are_full_then_stops_on_shutdown() {
    let db = crate::common::test_db().await;
    let c = db.client().await;
    bulk_prunable(&c, "bulk", 1_000).await;
    // An hour between passes: only "again at once while full" can drain this in time.
    let pruner = Pruner {
        pool: db.pool.clone(),
        interval: Duration::from_secs(3600),
        spread: Default::default(),
        batch: 100,
        retention: DAY,
        instruments: tasklane::telemetry::Instruments::noop(),
        start: Default::default(),
        deliveries_start: Default::default(),
    };
    let shutdown = CancellationToken::new();
    let service = tokio::spawn(pruner.run(shutdown.clone()));
    let what = "the backlog drained by consecutive passes";
    eventually(Duration::from_secs(30), what, || async {
        match count(&c, "SELECT count(*) FROM tasklane.tasks").await {
            0 => Ok(()),
            left => Err(left),
        }
    })
    .await;
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(5), service)
        .await
        .expect("stops on shutdown")
        .unwrap();
}

#[tokio::test]
async fn two_sweepers_at_once_never_error_or_double_count() {
    let db = crate::common::test_db().await;
    let setup = db.client().await;
    for round in 0..5 {
        bulk_prunable(&setup, &format!("round-{round}"), 3_000).await;
        let sweep = |client: tokio_postgres::Client| async move {
            let (mut total, mut passes) = (0u64, 0u32);
            loop {
                let n = prune_tasks(&client, DAY, 50, None, None)
                    .await
                    .expect("a pass never errors")
                    .count;
                assert!(n <= 50);
                total += n;
                passes += 1;
                if n == 0 {
                    return (total, passes);
                }
            }
        };
        let (a, b) = tokio::join!(
            tokio::spawn(sweep(db.client().await)),
            tokio::spawn(sweep(db.client().await))
        );
        let ((a, _), (b, _)) = (a.unwrap(), b.unwrap());
        assert_eq!(a + b, 3_000, "round {round}: {a} + {b}");
        assert_eq!(
            count(&setup, "SELECT count(*) FROM tasklane.tasks").await,
            0
        );
    }
    assert_no_advisory_locks(&db).await;
}
