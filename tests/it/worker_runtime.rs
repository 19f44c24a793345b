//! The in-process worker against a real PostgreSQL: handlers run, time out, see
//! cancellation and deletion at heartbeats, and settle through the fenced store.

use crate::common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::eventually;
use common::fixtures::*;
use tasklane::task::owner::Owner;
use tasklane::task::settlement::Success;
use tasklane::task::{Executor, Locality, TaskState, TaskType};
use tasklane::worker::{Handler, HandlerError, TaskContext, WorkerConfig};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// A handler that records that it started, then waits until it is cancelled or the
/// runner drops it (recording that too).
struct Hang {
    started: Arc<tokio::sync::Notify>,
    dropped: Arc<Dropped>,
}

/// Counts handler futures dropped, and wakes whoever waits for one.
#[derive(Default)]
struct Dropped {
    count: AtomicUsize,
    notify: tokio::sync::Notify,
}

struct DropFlag(Arc<Dropped>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.count.fetch_add(1, Ordering::SeqCst);
        self.0.notify.notify_one();
    }
}

#[async_trait::async_trait]
impl Handler for Hang {
    async fn run(&self, ctx: TaskContext) -> Result<Success, HandlerError> {
        let _flag = DropFlag(self.dropped.clone());
        self.started.notify_one();
        ctx.cancelled().await;
        Err(HandlerError::Cancelled)
    }
}

struct Running {
    shutdown: CancellationToken,
    handle: tokio::task::JoinHandle<()>,
}

impl Running {
    async fn stop(self) {
        self.shutdown.cancel();
        self.handle.await.unwrap();
    }
}

/// TYPE run by a custom handler, with this lease and attempt timeout.
fn custom_type(lease_seconds: i64, timeout_seconds: i64) -> TaskType {
    let mut task_type = TaskType::new(TYPE, Executor::Custom);
    task_type.lease_seconds = lease_seconds;
    task_type.attempt_timeout_seconds = timeout_seconds;
    task_type.backoff_base_ms = 60_000;
    task_type
}

/// Submits a task of `task_type` (its lease and timeout are snapshotted in the row).
async fn submit_as(
    c: &tokio_postgres::Client,
    key: &str,
    task_type: &TaskType,
) -> tasklane::task::record::TaskRecord {
    try_submit_as(c, &request(key, serde_json::json!({})), task_type)
        .await
        .unwrap()
        .task
}

/// Starts one claim loop serving `task_type` with `handler`.
fn start(db: &common::TestDb, handler: Arc<dyn Handler>, task_type: &TaskType) -> Running {
    start_with(db, handler, task_type, 4)
}

/// Starts one claim loop running up to `concurrency` attempts at once.
fn start_with(
    db: &common::TestDb,
    handler: Arc<dyn Handler>,
    task_type: &TaskType,
    concurrency: usize,
) -> Running {
    let config = WorkerConfig {
        worker_id: "test".into(),
        replica_id: Uuid::now_v7(),
        locality: Locality::Local,
        concurrency,
        claim_batch: concurrency.min(100),
        poll_interval: Duration::from_millis(50),
        polls: Default::default(),
        shutdown_grace: Duration::from_secs(5),
    };
    let worker = common::service::worker(
        db.pool.clone(),
        vec![task_type.clone()],
        HashMap::from([(TYPE.to_owned(), handler)]),
        config,
    );
    let shutdown = CancellationToken::new();
    let handle = tokio::spawn(worker.run(shutdown.clone()));
    Running { shutdown, handle }
}

/// Waits (bounded) until the task reaches a terminal state.
async fn settled(c: &tokio_postgres::Client, id: Uuid) -> tasklane::task::record::TaskRecord {
    let what = format!("task {id} to settle");
    eventually(Duration::from_secs(10), &what, || async {
        let task = get(c, id).await;
        if task.state.is_terminal() || task.state == TaskState::WaitingForRetry {
            Ok(task)
        } else {
            Err(task.state)
        }
    })
    .await
}

#[tokio::test]
async fn the_attempt_timeout_aborts_the_handler() {
    let db = common::test_db().await;
    let c = db.client().await;
    let started = Arc::new(tokio::sync::Notify::new());
    let dropped = Arc::new(Dropped::default());
    let hang = Arc::new(Hang {
        started: started.clone(),
        dropped: dropped.clone(),
    });
    let task_type = custom_type(30, 1);
    let worker = start(&db, hang, &task_type);
    let task = submit_as(&c, "slow", &task_type).await;
    started.notified().await;
    let done = settled(&c, task.id).await;
    assert_eq!(
        (done.state, done.error_code.as_deref()),
        (TaskState::WaitingForRetry, Some("attempt_timeout"))
    );
    assert_eq!(
        dropped.count.load(Ordering::SeqCst),
        1,
        "the handler future was dropped"
    );
    worker.stop().await;
}

#[tokio::test]
async fn a_cancel_seen_at_a_heartbeat_stops_the_handler() {
    let db = common::test_db().await;
    let c = db.client().await;
    let started = Arc::new(tokio::sync::Notify::new());
    let dropped = Arc::new(Dropped::default());
    let task_type = custom_type(3, 60);
    let worker = start(
        &db,
        Arc::new(Hang {
            started: started.clone(),
            dropped,
        }),
        &task_type,
    );
    let task = submit_as(&c, "cancel-me", &task_type).await;
    started.notified().await;
    let cancelling = tasklane::store::cancel::cancel(&c, &Owner::app(APP), task.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(cancelling.state, TaskState::Cancelling);
    // The heartbeat (every lease/3 = 1 s) carries the request to the handler.
    let done = settled(&c, task.id).await;
    assert_eq!(done.state, TaskState::Cancelled);
    assert_eq!(
        event_types(&c, task.id).await,
        vec![
            "task.queued",
            "task.running",
            "task.cancelling",
            "task.cancelled"
        ]
    );
    worker.stop().await;
}

#[tokio::test]
async fn a_deleted_task_stops_its_handler_and_is_not_recreated() {
    let db = common::test_db().await;
    let c = db.client().await;
    let started = Arc::new(tokio::sync::Notify::new());
    let dropped = Arc::new(Dropped::default());
    let task_type = custom_type(3, 60);
    let worker = start(
        &db,
        Arc::new(Hang {
            started: started.clone(),
            dropped: dropped.clone(),
        }),
        &task_type,
    );
    let task = submit_as(&c, "delete-me", &task_type).await;
    started.notified().await;
    c.execute("DELETE FROM tasklane.tasks WHERE id = $1", &[&task.id])
        .await
        .unwrap();
    // The next heartbeat (lease/3 = 1 s) finds the task gone and drops the handler.
    tokio::time::timeout(Duration::from_secs(10), dropped.notify.notified())
        .await
        .expect("the handler was stopped at its heartbeat");
    assert_eq!(dropped.count.load(Ordering::SeqCst), 1);
    let count: i64 = c
        .query_one("SELECT count(*) FROM tasklane.tasks", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 0);
    worker.stop().await;
}

#[tokio::test]
async fn many_long_attempts_keep_their_leases_through_the_batched_heartbeat() {
    const TASKS: i64 = 120;
    let db = common::test_db().await;
    let c = db.client().await;
    let dropped = Arc::new(Dropped::default());
    let hang = Arc::new(Hang {
        started: Arc::new(tokio::sync::Notify::new()),
        dropped: dropped.clone(),
    });
    // Leases of 2 s, extended every 2/3 s by the claim loop's batcher.
    let task_type = custom_type(2, 600);
    let worker = start_with(&db, hang, &task_type, TASKS as usize);
    let mut ids = Vec::new();
    for n in 0..TASKS {
        ids.push(submit_as(&c, &format!("long-{n}"), &task_type).await.id);
    }
    let alive = "SELECT count(*) FROM tasklane.tasks WHERE state = 'running' AND attempt = 1 \
                 AND lease_expires_at > started_at + interval '6 seconds'";
    eventually(
        Duration::from_secs(60),
        "every lease extended past three lease lengths after its claim",
        || async {
            match count(&c, alive).await {
                TASKS => Ok(()),
                n => Err(n),
            }
        },
    )
    .await;
    assert_eq!(
        dropped.count.load(Ordering::SeqCst),
        0,
        "no attempt was stopped"
    );
    let claims = "SELECT count(*) FROM tasklane.task_events WHERE type = 'task.running'";
    assert_eq!(count(&c, claims).await, TASKS, "each task was claimed once");
    // Cancellation reaches every handler through the batched extensions too.
    for id in &ids {
        tasklane::store::cancel::cancel(&c, &Owner::app(APP), *id)
            .await
            .unwrap();
    }
    let cancelled = "SELECT count(*) FROM tasklane.tasks WHERE state = 'cancelled'";
    eventually(Duration::from_secs(30), "every task cancelled", || async {
        match count(&c, cancelled).await {
            TASKS => Ok(()),
            n => Err(n),
        }
    })
    .await;
    worker.stop().await;
}

/// A handler failing with a retryable error until its third attempt.
struct Flaky(AtomicUsize);

#[async_trait::async_trait]
impl Handler for Flaky {
    async fn run(&self, ctx: TaskContext) -> Result<Success, HandlerError> {
        if self.0.fetch_add(1, Ordering::SeqCst) < 2 {
            return Err(HandlerError::Retryable {
                code: "flaky".into(),
                message: "try again".into(),
                retry_after: Some(Duration::ZERO),
            });
        }
        Ok(Success {
            result: serde_json::json!({"attempt": ctx.task.attempt}),
            ..Default::default()
        })
    }
}

#[tokio::test]
async fn retryable_errors_run_again_until_success() {
    let db = common::test_db().await;
    let c = db.client().await;
    let task_type = custom_type(30, 60);
    let worker = start(&db, Arc::new(Flaky(AtomicUsize::new(0))), &task_type);
    let task = submit_as(&c, "flaky", &task_type).await;
    let mut done = settled(&c, task.id).await;
    while !done.state.is_terminal() {
        done = settled(&c, task.id).await;
    }
    assert_eq!(done.state, TaskState::Succeeded);
    assert_eq!(done.result, Some(serde_json::json!({"attempt": 3})));
    worker.stop().await;
}
