//! Several real replica processes on one database: exactly-once execution under
//! concurrent claimers, graceful hand-back on SIGTERM, and recovery after `kill -9`.

use crate::common;

use std::time::{Duration, Instant};

use common::eventually;
use common::fixtures::*;
use common::serve::Serve;
use tasklane::task::TaskType;

const TYPES: &str = r#"
[[task_type]]
name = "summarize"
executor = "noop"

[[task_type]]
name = "nap"
executor = "sleep"
lease_seconds = 30
max_attempts = 5
on_restart = "retry"

[[task_type]]
name = "flop"
executor = "sleep"
max_attempts = 2
backoff_base_ms = 300

[[task_type]]
name = "short-lease-nap"
executor = "sleep"
lease_seconds = 2
max_attempts = 5
on_restart = "retry"
"#;

fn types() -> Vec<TaskType> {
    tasklane::task::types_file::TaskTypesFile::parse(TYPES).unwrap()
}

fn task_type(name: &str) -> TaskType {
    types().into_iter().find(|t| t.name == name).unwrap()
}

/// Submits `n` tasks of `type_name` concurrently over a pool; returns their ids.
async fn submit_many(
    db: &common::TestDb,
    type_name: &str,
    n: usize,
    input: serde_json::Value,
) -> Vec<uuid::Uuid> {
    let task_type = task_type(type_name);
    let pool = common::pool(&db.url, 16);
    let mut handles = Vec::new();
    for chunk in 0..16 {
        let (pool, task_type, input) = (pool.clone(), task_type.clone(), input.clone());
        handles.push(tokio::spawn(async move {
            let object = pool.get().await.unwrap();
            let client: &tokio_postgres::Client = &object;
            let mut ids = Vec::new();
            for i in (chunk..n).step_by(16) {
                let mut r = request(&format!("{}-{i}", task_type.name), input.clone());
                r.task_type = task_type.name.clone();
                ids.push(try_submit_as(client, &r, &task_type).await.unwrap().task.id);
            }
            ids
        }));
    }
    let mut ids = Vec::new();
    for handle in handles {
        ids.extend(handle.await.unwrap());
    }
    ids
}

/// Waits (bounded) until `sql` counts `expected`.
async fn until_count(c: &tokio_postgres::Client, sql: &str, expected: i64, within: Duration) {
    eventually(within, sql, || async {
        let n = count(c, sql).await;
        if n == expected {
            Ok(())
        } else {
            Err(format!("{n}, expected {expected}"))
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_tasks_run_exactly_once_on_three_replicas() {
    let db = common::test_db().await;
    let c = db.client().await;
    let ids = submit_many(&db, "summarize", 10_000, serde_json::json!({"n": 1})).await;
    assert_eq!(ids.len(), 10_000);
    let args = [
        "--claimers",
        "8",
        "--concurrency",
        "4",
        "--claim-batch",
        "4",
        "--pool-size",
        "16",
    ];
    let replicas: Vec<_> = (0..3)
        .map(|n| Serve::workers(&db.url, &format!("replica-{n}"), TYPES, &args))
        .collect();
    until_count(
        &c,
        "SELECT count(*) FROM tasklane.tasks WHERE state = 'succeeded'",
        10_000,
        Duration::from_secs(180),
    )
    .await;
    // Each claim writes one task.running event: exactly one per task means one execution.
    let executions = count(
        &c,
        "SELECT count(*) FROM tasklane.task_events WHERE type = 'task.running'",
    )
    .await;
    assert_eq!(executions, 10_000);
    let twice = count(
        &c,
        "SELECT count(*) FROM (SELECT task_id FROM tasklane.task_events WHERE type = 'task.running' \
         GROUP BY task_id HAVING count(*) <> 1) t",
    )
    .await;
    assert_eq!(twice, 0);
    // Every task's events are exactly queued, running, succeeded with seq 1, 2, 3.
    let malformed = count(
        &c,
        "SELECT count(*) FROM (SELECT task_id, array_agg(type ORDER BY seq) AS types, array_agg(seq ORDER BY seq) AS seqs \
         FROM tasklane.task_events GROUP BY task_id) t \
         WHERE types <> ARRAY['task.queued', 'task.running', 'task.succeeded'] OR seqs <> ARRAY[1, 2, 3]",
    )
    .await;
    assert_eq!(malformed, 0);
    // All three replicas took part.
    let workers = count(
        &c,
        "SELECT count(DISTINCT split_part(worker_id, '/', 1)) FROM tasklane.tasks",
    )
    .await;
    assert_eq!(workers, 3);
    drop(replicas);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_hands_running_tasks_to_another_replica_at_once() {
    let db = common::test_db().await;
    let c = db.client().await;
    let args = [
        "--concurrency",
        "4",
        "--shutdown-grace-seconds",
        "1",
        "--poll-interval-ms",
        "200",
    ];
    let mut first = Serve::workers(&db.url, "first", TYPES, &args);
    let ids = submit_many(&db, "nap", 4, serde_json::json!({"ms": 4000, "steps": 8})).await;
    until_count(
        &c,
        "SELECT count(*) FROM tasklane.tasks WHERE state = 'running'",
        4,
        Duration::from_secs(20),
    )
    .await;
    let _second = Serve::workers(&db.url, "second", TYPES, &args);
    // Wait until the second replica is registered (live) before stopping the first.
    until_count(
        &c,
        "SELECT count(*) FROM tasklane.replicas WHERE name = 'second'",
        1,
        Duration::from_secs(20),
    )
    .await;

    first.terminate();
    let handed_back = Instant::now();
    // It exits after its 1 s grace period.
    let status = first.wait_exit(Duration::from_secs(10)).await;
    assert!(status.success(), "clean exit: {status:?}");
    // The tasks run again on the second replica long before their 30 s leases would
    // have expired: they were handed back, not abandoned.
    until_count(
        &c,
        "SELECT count(*) FROM tasklane.tasks WHERE state = 'running' AND worker_id LIKE 'second/%'",
        4,
        Duration::from_secs(10),
    )
    .await;
    let took = handed_back.elapsed();
    assert!(took < Duration::from_secs(10), "took {took:?}");
    eprintln!("handed back and restarted within {took:?}");
    // Nothing is lost: every task finishes, after one handed-back attempt.
    until_count(
        &c,
        "SELECT count(*) FROM tasklane.tasks WHERE state = 'succeeded'",
        4,
        Duration::from_secs(30),
    )
    .await;
    for id in ids {
        let task = get(&c, id).await;
        assert_eq!(task.attempt, 2, "one attempt handed back, one finished");
        let events = event_types(&c, id).await;
        assert!(events.contains(&"task.queued".to_owned()));
        assert_eq!(events.last().unwrap(), "task.succeeded");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_loses_nothing_once_the_lease_expires() {
    let db = common::test_db().await;
    let c = db.client().await;
    let args = [
        "--concurrency",
        "2",
        "--poll-interval-ms",
        "200",
        "--rescue-interval-ms",
        "200",
    ];
    let mut doomed = Serve::workers(&db.url, "doomed", TYPES, &args);
    submit_many(
        &db,
        "short-lease-nap",
        2,
        serde_json::json!({"ms": 1500, "steps": 3}),
    )
    .await;
    until_count(
        &c,
        "SELECT count(*) FROM tasklane.tasks WHERE state = 'running'",
        2,
        Duration::from_secs(20),
    )
    .await;
    let _survivor = Serve::workers(&db.url, "survivor", TYPES, &args);
    until_count(
        &c,
        "SELECT count(*) FROM tasklane.replicas WHERE name = 'survivor'",
        1,
        Duration::from_secs(20),
    )
    .await;
    doomed.kill9();
    until_count(
        &c,
        "SELECT count(*) FROM tasklane.tasks WHERE state = 'succeeded'",
        2,
        Duration::from_secs(30),
    )
    .await;
    let rescued = count(
        &c,
        "SELECT count(*) FROM tasklane.task_events WHERE type = 'task.queued' AND data ->> 'code' = 'lease_expired'",
    )
    .await;
    assert_eq!(rescued, 2, "both tasks were rescued from the dead replica");
}

/// With polling effectively off, a NOTIFY after commit is what wakes the idle replica.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_wakes_an_idle_replica_on_another_process() {
    let db = common::test_db().await;
    let c = db.client().await;
    let _idle = Serve::workers(&db.url, "idle", TYPES, &["--poll-interval-ms", "600000"]);
    until_count(
        &c,
        "SELECT count(*) FROM tasklane.replicas WHERE name = 'idle'",
        1,
        Duration::from_secs(20),
    )
    .await;
    // The replica's first claim (at start) found nothing; give its listener a moment by
    // waiting for its LISTEN to be registered in pg_stat_activity (the work wake-ups';
    // the webhook deliverer listens on a channel of its own).
    until_count(
        &c,
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN tasklane_wakeup'",
        1,
        Duration::from_secs(20),
    )
    .await;
    submit_many(&db, "summarize", 1, serde_json::json!({})).await;
    c.execute("SELECT pg_notify('tasklane_wakeup', '')", &[])
        .await
        .unwrap();
    until_count(
        &c,
        "SELECT count(*) FROM tasklane.tasks WHERE state = 'succeeded'",
        1,
        Duration::from_secs(10),
    )
    .await;
}

/// With polling effectively off, a retry is claimed when its backoff ends: the replica
/// that settled it wakes the loops at that moment (no statement marks it, and an idle
/// cluster's polls are rare).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_wakes_the_loops_when_its_backoff_ends() {
    let db = common::test_db().await;
    let c = db.client().await;
    let _idle = Serve::workers(&db.url, "idle", TYPES, &["--poll-interval-ms", "600000"]);
    until_count(
        &c,
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN tasklane_wakeup'",
        1,
        Duration::from_secs(20),
    )
    .await;
    let ids = submit_many(
        &db,
        "flop",
        1,
        serde_json::json!({"ms": 1, "fail": "retryable"}),
    )
    .await;
    c.execute("SELECT pg_notify('tasklane_wakeup', '')", &[])
        .await
        .unwrap();
    // Both attempts ran: the second only after the first's backoff, with no poll due.
    until_count(
        &c,
        &format!(
            "SELECT count(*) FROM tasklane.tasks WHERE id = '{}' AND state = 'failed' AND attempt = 2",
            ids[0]
        ),
        1,
        Duration::from_secs(30),
    )
    .await;
}

/// Behind a pooler in transaction mode there is no LISTEN: polling alone keeps work flowing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_flows_without_listen() {
    let db = common::test_db().await;
    let c = db.client().await;
    let args = ["--listen-notify", "false", "--poll-interval-ms", "100"];
    let _replica = Serve::workers(&db.url, "polling", TYPES, &args);
    submit_many(&db, "summarize", 20, serde_json::json!({})).await;
    until_count(
        &c,
        "SELECT count(*) FROM tasklane.tasks WHERE state = 'succeeded'",
        20,
        Duration::from_secs(20),
    )
    .await;
    let listeners = count(
        &c,
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'",
    )
    .await;
    assert_eq!(listeners, 0);
}

/// The registry counts the live replicas that share each duty: the cluster-wide sweeps
/// stretch their intervals by the replicas that maintain, the idle claim polls by those
/// that work. A replica without a role is not counted for it, and an expired one for
/// neither.
#[tokio::test]
async fn the_registry_counts_the_live_replicas_that_share_each_duty() {
    use tasklane::store::replicas::{self, Duties, Sharers};
    let db = common::test_db().await;
    let mut c = db.client().await;
    let (both, worker, maintainer, second) = (
        uuid::Uuid::now_v7(),
        uuid::Uuid::now_v7(),
        uuid::Uuid::now_v7(),
        uuid::Uuid::now_v7(),
    );
    const BOTH: Duties = Duties {
        maintains: true,
        works: true,
    };
    let sharers = |maintainers, workers| Sharers {
        maintainers,
        workers,
    };
    let registered = register(&mut c, both, BOTH).await;
    assert!(!registered.other_live);
    assert_eq!(registered.sharers, sharers(1, 1));
    let worker_only = Duties {
        maintains: false,
        works: true,
    };
    let registered = register(&mut c, worker, worker_only).await;
    assert!(registered.other_live);
    assert_eq!(
        registered.sharers,
        sharers(1, 2),
        "a worker-only replica shares no sweep"
    );
    let maintainer_only = Duties {
        maintains: true,
        works: false,
    };
    assert_eq!(
        register(&mut c, maintainer, maintainer_only).await.sharers,
        sharers(2, 2),
        "a maintenance-only replica shares no poll"
    );
    assert_eq!(register(&mut c, second, BOTH).await.sharers, sharers(3, 3));
    let beat = |id, duties| {
        let c = &c;
        async move { replicas::heartbeat(c, id, "r", 15.0, duties).await.unwrap() }
    };
    assert_eq!(beat(both, BOTH).await, sharers(3, 3));
    assert_eq!(beat(worker, worker_only).await, sharers(3, 3));
    assert_eq!(beat(maintainer, maintainer_only).await, sharers(3, 3));
    c.execute(
        "UPDATE tasklane.replicas SET expires_at = now() - interval '1 second' WHERE id = $1",
        &[&second],
    )
    .await
    .unwrap();
    assert_eq!(
        beat(both, BOTH).await,
        sharers(2, 2),
        "an expired replica no longer shares the duties"
    );
}

async fn register(
    c: &mut tokio_postgres::Client,
    id: uuid::Uuid,
    duties: tasklane::store::replicas::Duties,
) -> tasklane::store::replicas::Registered {
    let tx = c.transaction().await.unwrap();
    let registered = tasklane::store::replicas::register(&tx, id, "r", 15.0, duties)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    registered
}
