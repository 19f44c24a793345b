//! A resource with one slot, its tasks run by three `tasklane serve` worker processes:
//! never two running at once (a ledger of claims and settlements from the task events),
//! and after a `kill -9` of the replica holding the slot it comes back once the lease
//! expires (the other replicas' rescuers requeue the task).

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::eventually;
use common::serve::Serve;
use tasklane::task::types_file::TaskTypesFile;
use tokio_postgres::Client;

const TYPES: &str = r#"
[[task_type]]
name = "gpu"
executor = "sleep"
resource = "local-model"
lease_seconds = 2
"#;

async fn submit(c: &Client, key: &str, input: serde_json::Value) -> uuid::Uuid {
    let types = TaskTypesFile::parse(TYPES).unwrap();
    let mut request = common::fixtures::request(key, input);
    request.task_type = "gpu".into();
    let task = request
        .resolve(common::fixtures::APP, &types[0], 1 << 20)
        .unwrap();
    c.batch_execute("BEGIN").await.unwrap();
    let submitted = tasklane::service::submit_in(c, &task)
        .await
        .expect("submit");
    c.batch_execute("COMMIT").await.unwrap();
    submitted.task.id
}

async fn one(c: &Client, sql: &str, id: Option<uuid::Uuid>) -> i64 {
    match id {
        Some(id) => c.query_one(sql, &[&id]).await.unwrap().get(0),
        None => c.query_one(sql, &[]).await.unwrap().get(0),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_slot_across_three_replicas_and_back_after_kill_9() {
    let db = common::test_db().await;
    let c = db.client().await;
    tasklane::admission::set_resource(&c, "local-model", 1)
        .await
        .unwrap();
    let mut replicas: Vec<Serve> = (0..3)
        .map(|i| {
            Serve::workers(
                &db.url,
                &format!("r{i}"),
                TYPES,
                &["--poll-interval-ms", "100", "--rescue-interval-ms", "200"],
            )
        })
        .collect();

    // Sample the running count of the resource from the database throughout.
    let stop = Arc::new(AtomicBool::new(false));
    let max_running = Arc::new(AtomicI64::new(0));
    let sampler = {
        let (stop, max_running, s) = (stop.clone(), max_running.clone(), db.client().await);
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let n = one(
                    &s,
                    "SELECT count(*) FROM tasklane.tasks WHERE state IN ('running', 'cancelling')",
                    None,
                )
                .await;
                max_running.fetch_max(n, Ordering::Relaxed);
            }
        })
    };

    let mut ids = Vec::new();
    for i in 0..6 {
        ids.push(submit(&c, &format!("short-{i}"), serde_json::json!({"ms": 150})).await);
    }
    eventually(Duration::from_secs(60), "six short tasks", || async {
        one(
            &c,
            "SELECT count(*) FROM tasklane.tasks WHERE state = 'succeeded'",
            None,
        )
        .await
            == 6
    })
    .await;

    // The ledger: the claim..settlement of each attempt that succeeded, ordered by
    // claim, never overlap. (An attempt that lost its lease under load ended without an
    // event of its own; its slot was given back when the rescuer requeued it.) Ordered
    // by transaction ids, not event times: an event's `at` is its transaction's start
    // (now()), which on a loaded box can precede the statement's snapshot by a few
    // milliseconds, so times alone can show an overlap that never happened. A claim
    // that took the slot freed by a settlement saw that settlement committed, so the
    // claim's transaction id (assigned at its first write, after its snapshot) is
    // greater than the settlement's; a claim that took the slot before the settlement
    // began writing would have the smaller one.
    let rows = c
        .query(
            "SELECT r.xid AS claimed, s.xid AS settled, t.worker_id
             FROM tasklane.tasks t
             JOIN LATERAL (SELECT e.xmin::text::bigint AS xid FROM tasklane.task_events e
                           WHERE e.task_id = t.id AND e.type = 'task.succeeded') s ON true
             JOIN LATERAL (SELECT e.xmin::text::bigint AS xid FROM tasklane.task_events e
                           WHERE e.task_id = t.id AND e.type = 'task.running'
                           ORDER BY e.seq DESC LIMIT 1) r ON true
             ORDER BY r.xid",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 6);
    let ledger: Vec<(i64, i64, String)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    for pair in ledger.windows(2) {
        assert!(
            pair[1].0 > pair[0].1,
            "overlap: {:?} claimed before {:?} was settled",
            pair[1],
            pair[0]
        );
    }
    let workers: std::collections::BTreeSet<_> = ledger
        .iter()
        .map(|l| l.2.split('/').next().unwrap().to_owned())
        .collect();
    println!("ledger ok: 6 tasks, replicas used: {workers:?}");

    // A long task takes the slot; a short one waits behind it.
    let long = submit(&c, "long", serde_json::json!({"ms": 60000, "steps": 60})).await;
    eventually(Duration::from_secs(30), "the long task running", || async {
        one(
            &c,
            "SELECT count(*) FROM tasklane.tasks WHERE id = $1 AND state = 'running'",
            Some(long),
        )
        .await
            == 1
    })
    .await;
    let after = submit(&c, "after", serde_json::json!({"ms": 50})).await;
    let holder: String = c
        .query_one(
            "SELECT worker_id FROM tasklane.tasks WHERE id = $1",
            &[&long],
        )
        .await
        .unwrap()
        .get(0);
    let victim: usize = holder
        .trim_start_matches('r')
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    replicas[victim].kill9();
    let killed_at = Instant::now();

    // The slot comes back after the lease expires: the waiting task runs elsewhere.
    eventually(
        Duration::from_secs(30),
        "the slot back after the lease expired",
        || async {
            one(
                &c,
                "SELECT count(*) FROM tasklane.tasks WHERE id = $1 AND state = 'succeeded'",
                Some(after),
            )
            .await
                == 1
        },
    )
    .await;
    let back_after = killed_at.elapsed();
    let row = c
        .query_one(
            "SELECT state, attempt, error_code FROM tasklane.task_views WHERE id = $1",
            &[&long],
        )
        .await
        .unwrap();
    let (state, attempt): (String, i32) = (row.get(0), row.get(1));
    println!("slot back {back_after:?} after kill -9; long task now {state} attempt {attempt}");
    assert!(
        back_after >= Duration::from_millis(500),
        "the slot came back before the lease could expire"
    );
    stop.store(true, Ordering::Relaxed);
    sampler.await.unwrap();
    assert!(
        max_running.load(Ordering::Relaxed) <= 1,
        "saw {} running",
        max_running.load(Ordering::Relaxed)
    );
    drop(replicas);
}
