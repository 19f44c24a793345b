//! A rolling restart under load, as Kubernetes does it: three replicas take steady
//! submits while each in turn gets SIGTERM, exits, and is replaced by a new process.
//! No accepted task is lost or succeeds twice, and no submit sees a 5xx from a replica
//! whose readiness had already turned 503 (a load balancer would have stopped sending
//! it traffic; a request it still accepted must be answered properly).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common;
use common::api::{self, ALL};
use common::fixtures::count;
use common::serve::{Options, Serve};

const REPLICAS: usize = 3;
const SUBMITTERS: usize = 6;

/// One replica slot: its address, and when its readiness was first seen at 503.
struct Slot {
    base: String,
    unready_since: Mutex<Option<Instant>>,
}

#[derive(Default)]
struct Tally {
    accepted: Vec<String>,
    /// 5xx answers from a replica already seen unready before the request was sent.
    violations: Vec<String>,
    /// Requests that found no listener (the replica had closed it): a client retries.
    refused_connections: usize,
}

#[tokio::test]
async fn a_rolling_restart_under_load_loses_nothing_and_answers_no_5xx_after_unready() {
    let db = common::test_db().await;
    let options = || Options {
        env: vec![("TASKLANE_READINESS_DRAIN_MS", "1000".into())],
        ..Options::default()
    };
    let mut replicas = Vec::new();
    for _ in 0..REPLICAS {
        replicas.push(Serve::start(&db.url, options()).await);
    }
    let token = api::token(&db.url, "mail", None, ALL).await;
    let slots: Arc<Mutex<Vec<Arc<Slot>>>> =
        Arc::new(Mutex::new(replicas.iter().map(|r| slot(&r.base)).collect()));
    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let monitor = tokio::spawn(monitor(slots.clone(), stop.clone()));
    let mut submitters = tokio::task::JoinSet::new();
    for n in 0..SUBMITTERS {
        submitters.spawn(submit_until(
            n,
            slots.clone(),
            token.clone(),
            stop.clone(),
            tally.clone(),
        ));
    }

    let mut retired = Vec::new();
    for (i, replica) in replicas.iter_mut().enumerate() {
        // Let load build up against the current set before each restart.
        let before = tally.lock().unwrap().accepted.len();
        common::eventually(Duration::from_secs(30), "submits to flow", || async {
            tally.lock().unwrap().accepted.len() >= before + 20
        })
        .await;
        replica.terminate();
        let status = replica.wait_exit(Duration::from_secs(30)).await;
        assert!(
            status.success(),
            "replica {i} exits cleanly on SIGTERM: {status}"
        );
        let fresh = Serve::start(&db.url, options()).await;
        let old = std::mem::replace(&mut slots.lock().unwrap()[i], slot(&fresh.base));
        retired.push(old);
        *replica = fresh;
    }
    let before = tally.lock().unwrap().accepted.len();
    common::eventually(
        Duration::from_secs(30),
        "submits to the new set",
        || async { tally.lock().unwrap().accepted.len() >= before + 20 },
    )
    .await;
    stop.store(true, Ordering::SeqCst);
    while submitters.join_next().await.is_some() {}
    monitor.await.unwrap();

    // The drain was observed: every stopped replica answered /readyz with 503 first.
    for old in &retired {
        assert!(
            old.unready_since.lock().unwrap().is_some(),
            "{} was never seen unready",
            old.base
        );
    }
    let (accepted, refused) = {
        let tally = tally.lock().unwrap();
        assert!(
            tally.violations.is_empty(),
            "5xx after readiness turned 503: {:?}",
            tally.violations
        );
        (tally.accepted.clone(), tally.refused_connections)
    };
    let c = db.client().await;
    let ids: Vec<uuid::Uuid> = accepted.iter().map(|id| id.parse().unwrap()).collect();
    let total = ids.len() as i64;
    common::eventually(
        Duration::from_secs(60),
        "every accepted task to succeed",
        || async {
            let done = c
            .query_one(
                "SELECT count(*) FROM tasklane.tasks WHERE id = ANY($1) AND state = 'succeeded'",
                &[&ids],
            )
            .await
            .unwrap()
            .get::<_, i64>(0);
            if done == total {
                Ok(())
            } else {
                Err(format!("{done} of {total} succeeded"))
            }
        },
    )
    .await;
    let twice = count(
        &c,
        "SELECT count(*) FROM (SELECT task_id FROM tasklane.task_events \
         WHERE type = 'task.succeeded' GROUP BY task_id HAVING count(*) > 1) t",
    )
    .await;
    assert_eq!(twice, 0, "no task succeeded twice");
    let stall: f64 = c
        .query_one(
            "SELECT coalesce(max(extract(epoch FROM r.at - q.at)), 0)::float8 \
             FROM tasklane.task_events q JOIN tasklane.task_events r \
               ON r.task_id = q.task_id AND r.type = 'task.running' \
             WHERE q.type = 'task.queued' AND q.task_id = ANY($1)",
            &[&ids],
        )
        .await
        .unwrap()
        .get(0);
    eprintln!(
        "rolling restart: {total} accepted, {refused} connections refused (closed listener), \
         longest pickup stall {:.0} ms",
        stall * 1000.0
    );
}

fn slot(base: &str) -> Arc<Slot> {
    Arc::new(Slot {
        base: base.to_owned(),
        unready_since: Mutex::new(None),
    })
}

/// Polls every replica's `/readyz` and notes when each first answered 503.
async fn monitor(slots: Arc<Mutex<Vec<Arc<Slot>>>>, stop: Arc<AtomicBool>) {
    let client = reqwest::Client::new();
    while !stop.load(Ordering::SeqCst) {
        let current: Vec<Arc<Slot>> = slots.lock().unwrap().clone();
        for slot in current {
            let answer = client.get(format!("{}/readyz", slot.base)).send().await;
            if answer.is_ok_and(|a| a.status() == 503) {
                slot.unready_since
                    .lock()
                    .unwrap()
                    .get_or_insert_with(Instant::now);
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Submits short sleep tasks round-robin over the replicas until `stop`.
async fn submit_until(
    n: usize,
    slots: Arc<Mutex<Vec<Arc<Slot>>>>,
    token: String,
    stop: Arc<AtomicBool>,
    tally: Arc<Mutex<Tally>>,
) {
    let client = reqwest::Client::new();
    let mut k = 0usize;
    while !stop.load(Ordering::SeqCst) {
        k += 1;
        let slot = slots.lock().unwrap()[(n + k) % REPLICAS].clone();
        let sent_at = Instant::now();
        let body = json!({"task_type": "sleep", "scope_id": format!("s{n}"),
                          "effect_key": format!("{n}-{k}"), "input": {"ms": 100}});
        let answer = client
            .post(format!("{}/v1/tasks", slot.base))
            .bearer_auth(&token)
            .json(&body)
            .send()
            .await;
        match answer {
            Err(_) => tally.lock().unwrap().refused_connections += 1,
            Ok(answer) if answer.status().is_server_error() => {
                let unready = *slot.unready_since.lock().unwrap();
                if unready.is_some_and(|t| t < sent_at) {
                    let problem = format!("{} from {}", answer.status(), slot.base);
                    tally.lock().unwrap().violations.push(problem);
                }
            }
            Ok(answer) => {
                assert_eq!(answer.status(), 202, "a submit is accepted");
                let view: serde_json::Value = answer.json().await.unwrap();
                let id = view["id"].as_str().unwrap().to_owned();
                tally.lock().unwrap().accepted.push(id);
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
