//! Owner deletion: every state of the scope or one exact source, nothing else; the
//! owner lock held exclusively until the caller commits; the fence; a worker that finds
//! its task gone.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tasklane::store::lease::{self, LeaseError};

use tasklane::task::lease::Beat;

use tasklane::store::lifecycle;
use tasklane::store::SubmitError;
use tasklane::task::settlement::Report;
use tasklane::task::settlement::Success;
use tasklane::task::{Executor, Locality, TaskType};
use tasklane::worker::{Handler, HandlerError, TaskContext, WorkerConfig};
use tokio_util::sync::CancellationToken;

use super::support::*;
use crate::common::eventually;
use crate::common::fixtures::{self, APP, SCOPE};

#[tokio::test]
async fn deletes_every_state_of_the_scope_and_nothing_else() {
    let db = crate::common::test_db().await;
    let c = db.client().await;
    let running = submit_at(&c, At::scope(SCOPE), "running").await;
    fixtures::claim_one(&c).await;
    let mut doomed = vec![running.id];
    for state in [
        "queued",
        "succeeded",
        "failed",
        "cancelled",
        "waiting_for_retry",
        "cancelling",
    ] {
        let task = submit_at(&c, At::scope(SCOPE), state).await;
        if state != "queued" {
            place(&c, task.id, state, None, None).await;
        }
        doomed.push(task.id);
    }
    let neighbour = submit_at(&c, At::scope("mailbox-8"), "n").await;
    let prefix = submit_at(&c, At::scope("mailbox-70"), "p").await;
    let other_app = submit_at(
        &c,
        At {
            app: "other",
            scope: SCOPE,
            source: None,
        },
        "o",
    )
    .await;
    assert_eq!(
        lifecycle::delete(&c, APP, SCOPE, None, false)
            .await
            .unwrap(),
        7
    );
    for id in doomed {
        assert!(!exists(&c, id).await);
        assert_eq!(events_of(&c, id).await, 0);
    }
    for id in [neighbour.id, prefix.id, other_app.id] {
        assert!(exists(&c, id).await);
    }
    assert_eq!(
        lifecycle::delete(&c, APP, SCOPE, None, false)
            .await
            .unwrap(),
        0
    );
    assert_no_advisory_locks(&db).await;
}

#[tokio::test]
async fn a_source_matches_exactly_never_as_a_pattern_or_prefix() {
    let db = crate::common::test_db().await;
    let c = db.client().await;
    let sources = [
        "item:42", "item:43", "item:4", "item:420", "item:%", "item:_2", "ITEM:42",
    ];
    let mut ids = HashMap::new();
    for source in sources {
        ids.insert(
            source,
            submit_at(&c, At::source(SCOPE, source), source).await.id,
        );
    }
    let no_source = submit_at(&c, At::scope(SCOPE), "none").await;
    let elsewhere = submit_at(&c, At::source("mailbox-8", "item:42"), "e").await;
    for (source, gone) in [
        ("item:42", 1),
        ("item:%", 1),
        ("item:_2", 1),
        ("item:", 0),
        ("item:42", 0),
    ] {
        assert_eq!(
            lifecycle::delete(&c, APP, SCOPE, Some(source), false)
                .await
                .unwrap(),
            gone,
            "{source}"
        );
    }
    for source in ["item:42", "item:%", "item:_2"] {
        assert!(!exists(&c, ids[source]).await, "{source}");
    }
    for source in ["item:43", "item:4", "item:420", "ITEM:42"] {
        assert!(exists(&c, ids[source]).await, "{source}");
    }
    assert!(exists(&c, no_source.id).await);
    assert!(exists(&c, elsewhere.id).await);
}

#[tokio::test]
async fn a_fence_refuses_submits_until_lifted() {
    let db = crate::common::test_db().await;
    let c = db.client().await;
    let before = submit_at(&c, At::scope(SCOPE), "before").await;
    assert_eq!(
        lifecycle::delete(&c, APP, SCOPE, None, true).await.unwrap(),
        1
    );
    assert!(!exists(&c, before.id).await);
    let refused = try_submit_at(&c, At::scope(SCOPE), "after").await;
    assert!(
        matches!(refused, Err(SubmitError::ScopeDeleted)),
        "{refused:?}"
    );
    // Other scopes, the same scope name in another app, are not fenced.
    submit_at(&c, At::scope("mailbox-8"), "x").await;
    submit_at(
        &c,
        At {
            app: "other",
            scope: SCOPE,
            source: None,
        },
        "x",
    )
    .await;
    // A second deletion with a fence keeps one fence.
    assert_eq!(
        lifecycle::delete(&c, APP, SCOPE, None, true).await.unwrap(),
        0
    );
    assert!(lifecycle::lift_fence(&c, APP, SCOPE).await.unwrap());
    assert!(!lifecycle::lift_fence(&c, APP, SCOPE).await.unwrap());
    submit_at(&c, At::scope(SCOPE), "after").await;
    assert_no_advisory_locks(&db).await;
}

#[tokio::test]
async fn a_rolled_back_deletion_deletes_and_fences_nothing() {
    let db = crate::common::test_db().await;
    let c = db.client().await;
    let task = submit_at(&c, At::scope(SCOPE), "k").await;
    c.batch_execute(
        "CREATE TABLE mailboxes (id text PRIMARY KEY); INSERT INTO mailboxes VALUES ('mailbox-7')",
    )
    .await
    .unwrap();
    // The application's own deletion transaction, rolled back.
    c.batch_execute(
        "BEGIN;
         DELETE FROM mailboxes WHERE id = 'mailbox-7';
         SELECT tasklane.delete_tasks('mail', 'mailbox-7', NULL, true);
         ROLLBACK;",
    )
    .await
    .unwrap();
    assert!(exists(&c, task.id).await);
    assert_eq!(count(&c, "SELECT count(*) FROM mailboxes").await, 1);
    submit_at(&c, At::scope(SCOPE), "k2").await;
    assert_no_advisory_locks(&db).await;
}

#[tokio::test]
async fn the_owner_lock_is_exclusive_until_the_caller_commits() {
    let db = crate::common::test_db().await;
    let mut deleter = db.client().await;
    let probe = db.client().await;
    let submitter = db.client().await;
    let tx = deleter.transaction().await.unwrap();
    lifecycle::delete(&tx, APP, SCOPE, None, false)
        .await
        .unwrap();
    let try_shared =
        "SELECT pg_try_advisory_xact_lock_shared(tasklane.owner_key('mail', 'mailbox-7'))";
    assert!(!probe
        .query_one(try_shared, &[])
        .await
        .unwrap()
        .get::<_, bool>(0));
    // Another scope's lock is free.
    let other = "SELECT pg_try_advisory_xact_lock_shared(tasklane.owner_key('mail', 'mailbox-8'))";
    assert!(probe.query_one(other, &[]).await.unwrap().get::<_, bool>(0));
    // A submit to the scope waits for the deletion's commit.
    let submit =
        tokio::spawn(async move { try_submit_at(&submitter, At::scope(SCOPE), "k").await });
    let waiting = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
                   AND database = (SELECT oid FROM pg_database WHERE datname = current_database())";
    eventually(
        Duration::from_secs(10),
        "the submit to queue behind the owner lock",
        || async { count(&probe, waiting).await > 0 },
    )
    .await;
    assert!(!submit.is_finished());
    tx.commit().await.unwrap();
    let submitted = submit
        .await
        .unwrap()
        .expect("admitted once the deletion committed");
    assert!(
        exists(&probe, submitted.task.id).await,
        "it came after the deletion, so it stays"
    );
    assert_no_advisory_locks(&db).await;
}

#[tokio::test]
async fn deletion_needs_read_committed() {
    let db = crate::common::test_db().await;
    let c = db.client().await;
    c.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        .await
        .unwrap();
    let error = lifecycle::delete(&c, APP, SCOPE, None, false)
        .await
        .unwrap_err();
    assert_eq!(
        error.code(),
        Some(&tokio_postgres::error::SqlState::FEATURE_NOT_SUPPORTED)
    );
    c.batch_execute("ROLLBACK").await.unwrap();
}

#[tokio::test]
async fn a_deleted_task_is_gone_for_its_worker_and_its_late_writes_create_nothing() {
    let db = crate::common::test_db().await;
    let mut c = db.client().await;
    submit_at(&c, At::scope(SCOPE), "k").await;
    let claimed = fixtures::claim_one(&c).await;
    assert_eq!(
        lifecycle::delete(&c, APP, SCOPE, None, false)
            .await
            .unwrap(),
        1
    );
    let beat = lease::heartbeat(&c, claimed.id, claimed.lease_token, &Beat::default()).await;
    assert!(matches!(beat, Err(LeaseError::Gone)), "{beat:?}");
    let success = Success {
        result: serde_json::json!(1),
        ..Default::default()
    };
    let done = lease::complete(&c, claimed.id, claimed.lease_token, &success).await;
    assert!(matches!(done, Err(LeaseError::Gone)), "{done:?}");
    let report = Report::Error {
        code: "x".into(),
        message: "y".into(),
        retryable: true,
        retry_after: None,
    };
    let settled = lease::settle(
        &mut c,
        claimed.id,
        claimed.lease_token,
        report,
        &fixtures::fast_backoff(),
    )
    .await;
    assert!(matches!(settled, Err(LeaseError::Gone)), "{settled:?}");
    assert!(!exists(&c, claimed.id).await);
    assert_eq!(events_of(&c, claimed.id).await, 0);
}

/// Runs until dropped; tells the test when it started and when the runner dropped it.
struct Blocking {
    started: tokio::sync::mpsc::UnboundedSender<()>,
    dropped: tokio::sync::mpsc::UnboundedSender<()>,
}

struct OnDrop(tokio::sync::mpsc::UnboundedSender<()>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

#[async_trait::async_trait]
impl Handler for Blocking {
    async fn run(&self, _ctx: TaskContext) -> Result<Success, HandlerError> {
        let _guard = OnDrop(self.dropped.clone());
        let _ = self.started.send(());
        std::future::pending::<()>().await;
        unreachable!()
    }
}

#[tokio::test]
async fn an_in_process_worker_stops_at_its_next_heartbeat_after_deletion() {
    let db = crate::common::test_db().await;
    let c = db.client().await;
    let (started_tx, mut started) = tokio::sync::mpsc::unbounded_channel();
    let (dropped_tx, mut dropped) = tokio::sync::mpsc::unbounded_channel();
    let handler: Arc<dyn Handler> = Arc::new(Blocking {
        started: started_tx,
        dropped: dropped_tx,
    });
    let custom = HashMap::from([(fixtures::TYPE.to_owned(), handler)]);
    let task = submit_at(&c, At::scope(SCOPE), "k").await;
    // A 3 s lease: the worker heartbeats every second.
    c.execute(
        "UPDATE tasklane.tasks SET lease_seconds = 3 WHERE id = $1",
        &[&task.id],
    )
    .await
    .unwrap();
    let config = WorkerConfig {
        worker_id: "w".into(),
        replica_id: uuid::Uuid::now_v7(),
        locality: Locality::Local,
        concurrency: 1,
        claim_batch: 1,
        poll_interval: Duration::from_millis(50),
        polls: Default::default(),
        shutdown_grace: Duration::from_secs(1),
    };
    let shutdown = CancellationToken::new();
    let worker = crate::common::service::worker(
        db.pool.clone(),
        vec![TaskType::new(fixtures::TYPE, Executor::Custom)],
        custom,
        config,
    );
    let running = tokio::spawn(worker.run(shutdown.clone()));
    tokio::time::timeout(Duration::from_secs(10), started.recv())
        .await
        .expect("the handler starts");
    assert_eq!(
        lifecycle::delete(&c, APP, SCOPE, None, false)
            .await
            .unwrap(),
        1
    );
    tokio::time::timeout(Duration::from_secs(10), dropped.recv())
        .await
        .expect("stopped at the next heartbeat");
    assert!(!exists(&c, task.id).await);
    assert_eq!(events_of(&c, task.id).await, 0);
    shutdown.cancel();
    running.await.unwrap();
    assert!(!exists(&c, task.id).await, "nothing recreated at shutdown");
    assert_no_advisory_locks(&db).await;
}
