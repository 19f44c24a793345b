//! Capacity 10 for one app, 64 concurrent submitters (64 connections, Rust API) and
//! three `tasklane serve` worker processes running the tasks: the non-terminal count,
//! sampled continuously from the database, never exceeds 10; every refusal is
//! `capacity_exhausted`; completions in the other processes make room for new tasks.

use crate::admission_support;
use crate::common;

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;

use admission_support::*;
use common::serve::Serve;
use tasklane::admission::{LimitKind, RefusalCode};
use tasklane::service::{Owner, ServiceError, Tasklane, Wakeup};
use tasklane::task::types_file::TaskTypesFile;
use tasklane::task::TaskTypes;

const TYPES: &str = r#"
[[task_type]]
name = "work"
executor = "sleep"
lease_seconds = 5
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_replicas_and_sixty_four_submitters_hold_capacity_ten() {
    let db = common::test_db().await;
    let admin = db.client().await;
    set(
        &admin,
        limit(LimitKind::Capacity, Some("mail"), None, 10, None),
    )
    .await;
    let replicas: Vec<Serve> = (0..3)
        .map(|i| {
            Serve::workers(
                &db.url,
                &format!("c{i}"),
                TYPES,
                &["--poll-interval-ms", "50"],
            )
        })
        .collect();
    let task_types = TaskTypes::new(TaskTypesFile::parse(TYPES).unwrap());
    let tl = Tasklane::new(
        common::pool(&db.url, 64),
        Arc::new(task_types),
        Wakeup::default(),
        1 << 20,
    );

    let stop = Arc::new(AtomicBool::new(false));
    let max_seen = Arc::new(AtomicI64::new(0));
    let sampler = {
        let (stop, max_seen, c) = (stop.clone(), max_seen.clone(), db.client().await);
        tokio::spawn(async move {
            let mut samples = 0u64;
            while !stop.load(Ordering::Relaxed) {
                max_seen.fetch_max(non_terminal(&c).await, Ordering::Relaxed);
                samples += 1;
            }
            samples
        })
    };
    let admitted = Arc::new(AtomicUsize::new(0));
    let mut submitters = tokio::task::JoinSet::new();
    for s in 0..64 {
        let (tl, admitted) = (tl.clone(), admitted.clone());
        submitters.spawn(async move {
            let mut refusals = Vec::new();
            let mut i = 0;
            while admitted.load(Ordering::Relaxed) < 100 {
                let mut r = request(&format!("s{s}-{i}"), None);
                r.task_type = "work".into();
                r.input = serde_json::json!({"ms": 20});
                match tl.submit(&Owner::app("mail"), &r).await {
                    Ok(_) => {
                        admitted.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(ServiceError::Refused(refusal)) => {
                        refusals.push(refusal.code);
                        // Back off a little as a client honouring Retry-After would.
                        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                    }
                    Err(e) => panic!("submit: {e}"),
                }
                i += 1;
            }
            refusals
        });
    }
    let mut refusals = Vec::new();
    while let Some(r) = submitters.join_next().await {
        refusals.extend(r.unwrap());
    }
    stop.store(true, Ordering::Relaxed);
    let samples = sampler.await.unwrap();
    let max = max_seen.load(Ordering::Relaxed);
    let finished = count(
        &admin,
        "SELECT count(*) FROM tasklane.tasks WHERE state = 'succeeded'",
    )
    .await;
    let by_replica = admin
        .query("SELECT split_part(worker_id, '/', 1), count(*) FROM tasklane.tasks WHERE worker_id IS NOT NULL GROUP BY 1 ORDER BY 1", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1)))
        .collect::<Vec<_>>();
    println!(
        "3 replicas: admitted {}, refused {}, finished {finished}, max non-terminal {max}, samples {samples}, by replica {by_replica:?}",
        admitted.load(Ordering::Relaxed),
        refusals.len()
    );
    assert!(max <= 10, "saw {max} non-terminal tasks");
    assert!(admitted.load(Ordering::Relaxed) >= 100);
    assert!(
        finished >= 90,
        "completions in the replicas made room: {finished}"
    );
    assert!(refusals
        .iter()
        .all(|c| *c == RefusalCode::CapacityExhausted));
    assert!(samples > 10);
    drop(replicas);
}
