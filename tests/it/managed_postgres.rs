//! What a managed PostgreSQL does to its clients on an ordinary day, each on a private
//! cluster of its own (the settings changed here would reach every other test):
//!
//! - a switchover's read-only moment: `default_transaction_read_only` switched on under
//!   load, then off. The replica turns unready while the server refuses writes, no
//!   task fails, none succeeds twice, every task's events stay contiguous, and every
//!   acknowledged task succeeds.
//! - too many connections: every slot is taken when a replica starts. It does not exit:
//!   `/healthz` answers 200 and `/readyz` 503 naming the refusal, and it starts once a
//!   slot frees.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::api::{self, Api, ALL};
use common::eventually;
use common::serve::{Options, Serve};
use serde_json::json;
use tasklane::devdb::{ClusterOptions, PrivateCluster};
use tokio_util::sync::CancellationToken;

const TYPES: &str = r#"
[[task_type]]
name = "short"
executor = "sleep"
lease_seconds = 10
max_attempts = 3
"#;

const WITHIN: Duration = Duration::from_secs(90);
/// How long the server refuses writes.
const READ_ONLY_FOR: Duration = Duration::from_secs(4);
const RSS_BOUND_MIB: f64 = 200.0;

/// A private cluster started with `settings`, with a migrated database `name`.
async fn cluster(settings: &[(&str, &str)], name: &str) -> (PrivateCluster, String) {
    let options = ClusterOptions {
        settings: settings
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..ClusterOptions::default()
    };
    let cluster = tokio::task::spawn_blocking(move || PrivateCluster::start_with(&options))
        .await
        .unwrap()
        .expect("start a private cluster");
    let admin = tasklane::store::connect::connect(cluster.url())
        .await
        .unwrap();
    admin
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .unwrap();
    let url = tasklane::devdb::url_with_database(cluster.url(), name);
    tasklane::store::migrate::run(&url).await.expect("migrate");
    (cluster, url)
}

/// Lines kept by a task and read by the test.
type Kept = Arc<Mutex<Vec<String>>>;

/// Submits a short task every 20 ms until stopped, keeping the acknowledged ids and
/// the answers that were not acknowledgements.
fn submit_flow(api: Api, stop: CancellationToken) -> (Kept, Kept) {
    let acknowledged = Arc::new(Mutex::new(Vec::new()));
    let refused = Arc::new(Mutex::new(Vec::new()));
    let (ids, other) = (acknowledged.clone(), refused.clone());
    tokio::spawn(async move {
        for n in 0.. {
            let input = json!({"input": {"ms": 200}});
            let key = format!("flow-{n}");
            let submitted = api.submit("short", "flow", &key, input);
            tokio::select! {
                answer = submitted => match answer.status {
                    202 => ids.lock().unwrap().push(answer.body["id"].as_str().unwrap().to_owned()),
                    status => other.lock().unwrap().push(format!("{status} {}", answer.body)),
                },
                _ = stop.cancelled() => return,
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(20)) => {}
                _ = stop.cancelled() => return,
            }
        }
    });
    (acknowledged, refused)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_moment_fails_no_task_and_applies_nothing_twice() {
    let (cluster, url) = cluster(&[], "read_only").await;
    let options = |name: &str| Options {
        name: Some(name.into()),
        task_types: Some(TYPES),
        ..Default::default()
    };
    let replicas = [
        Serve::start(&url, options("one")).await,
        Serve::start(&url, options("two")).await,
    ];
    let api = replicas[0].api(&api::token(&url, "ro", None, ALL).await);
    let stop = CancellationToken::new();
    let (acknowledged, refused) = submit_flow(api.clone(), stop.clone());
    let running = || async {
        let answer = api.get("/v1/tasks?state=running").await;
        let n = answer.body["items"].as_array().map_or(0, |t| t.len());
        match n {
            0 => Err(answer.body),
            _ => Ok(()),
        }
    };
    eventually(WITHIN, "tasks running under load", running).await;

    let admin = tasklane::store::connect::connect(cluster.url())
        .await
        .unwrap();
    let switch = |on: bool| {
        let admin = &admin;
        async move {
            let set = format!("ALTER SYSTEM SET default_transaction_read_only = {on}");
            admin.batch_execute(&set).await.unwrap();
            admin
                .batch_execute("SELECT pg_reload_conf()")
                .await
                .unwrap();
        }
    };
    switch(true).await;
    let readyz = format!("{}/readyz", replicas[1].base);
    let probes = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    eventually(WITHIN, "readiness 503 while read-only", || async {
        let status = probes
            .get(&readyz)
            .send()
            .await
            .map(|r| r.status().as_u16());
        match status {
            Ok(503) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    tokio::time::sleep(READ_ONLY_FOR).await; // the outage itself, not a synchronization
    switch(false).await;
    eventually(WITHIN, "readiness 200 again", || async {
        let status = probes
            .get(&readyz)
            .send()
            .await
            .map(|r| r.status().as_u16());
        match status {
            Ok(200) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let before_stop = acknowledged.lock().unwrap().len();
    eventually(
        WITHIN,
        "submits acknowledged after the read-only moment",
        || async { acknowledged.lock().unwrap().len() > before_stop + 5 },
    )
    .await;
    stop.cancel();

    let ids = acknowledged.lock().unwrap().clone();
    let client = tasklane::store::connect::connect(&url).await.unwrap();
    eventually(WITHIN, "every acknowledged task to succeed", || async {
        let row = client
            .query_one(
                "SELECT count(*) FILTER (WHERE state = 'succeeded'),
                        count(*) FILTER (WHERE state = 'failed')
                 FROM tasklane.tasks WHERE id::text = ANY($1)",
                &[&ids],
            )
            .await
            .map_err(|e| e.to_string())?;
        let (succeeded, failed): (i64, i64) = (row.get(0), row.get(1));
        assert_eq!(failed, 0, "a task failed");
        match succeeded as usize == ids.len() {
            true => Ok(()),
            false => Err(format!("{succeeded} of {} succeeded", ids.len())),
        }
    })
    .await;
    let twice: i64 = client
        .query_one(
            "SELECT count(*) FROM (SELECT task_id FROM tasklane.task_attempts
             WHERE outcome = 'succeeded' GROUP BY task_id HAVING count(*) > 1) t",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(twice, 0, "tasks succeeded twice");
    // Submits and settlements waited for the server to take writes again: none was
    // refused, no attempt's end was lost (to be redone after its lease).
    let refused = refused.lock().unwrap().clone();
    assert!(
        refused.is_empty(),
        "{} submits refused, the first: {:?}",
        refused.len(),
        refused.first()
    );
    let lost: i64 = client
        .query_one(
            "SELECT count(*) FROM tasklane.task_attempts WHERE outcome <> 'succeeded'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(lost, 0, "attempts that did not end in success");
    let gaps: i64 = client
        .query_one(
            "SELECT count(*) FROM (SELECT task_id FROM tasklane.task_events
             GROUP BY task_id HAVING max(seq) <> count(*) OR min(seq) <> 1) t",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(gaps, 0, "tasks whose events are not contiguous");
    for replica in &replicas {
        assert!(
            replica.rss_mib() < RSS_BOUND_MIB,
            "a replica grew or exited"
        );
    }
    println!(
        "read-only moment: {} tasks acknowledged, all succeeded once",
        ids.len()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replica_without_a_connection_slot_waits_unready_and_starts_when_one_frees() {
    // No slots reserved for superusers: the test's user is one.
    let settings = [
        ("max_connections", "30"),
        ("superuser_reserved_connections", "0"),
    ];
    let (_cluster, url) = cluster(&settings, "crowded").await;
    let token = api::token(&url, "crowd", None, ALL).await;
    let mut held = Vec::new();
    loop {
        match tasklane::store::connect::connect(&url).await {
            Ok(client) => held.push(client),
            Err(error) => {
                let message = format!("{error:#}");
                assert!(
                    message.contains("53300") || message.contains("too many"),
                    "{message}"
                );
                break;
            }
        }
    }
    let replica = Serve::spawn(
        &url,
        Options {
            task_types: Some(TYPES),
            ..Default::default()
        },
    );
    let probes = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let readyz = format!("{}/readyz", replica.base);
    let detail = eventually(WITHIN, "a 503 naming the refusal", || async {
        let answer = probes
            .get(&readyz)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = answer.status().as_u16();
        let body: serde_json::Value = answer.json().await.map_err(|e| e.to_string())?;
        let detail = body["detail"].as_str().unwrap_or_default().to_owned();
        match status == 503 && detail.contains("too many clients") {
            true => Ok(detail),
            false => Err(format!("{status} {detail}")),
        }
    })
    .await;
    let health = probes
        .get(format!("{}/healthz", replica.base))
        .send()
        .await
        .expect("/healthz answers while the replica waits");
    assert_eq!(health.status(), 200);
    assert!(
        replica.rss_mib() < RSS_BOUND_MIB,
        "the waiting replica exited"
    );

    drop(held);
    eventually(WITHIN, "the replica ready once slots free", || async {
        let status = probes
            .get(&readyz)
            .send()
            .await
            .map(|r| r.status().as_u16());
        match status {
            Ok(200) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let api = replica.api(&token);
    let answer = api
        .submit("short", "s", "after", json!({"input": {"ms": 10}}))
        .await;
    assert_eq!(answer.status, 202, "{:?}", answer.body);
    let id = answer.body["id"].as_str().unwrap().to_owned();
    api.wait_for(&id, |task| task["state"] == "succeeded").await;
    println!("too many connections: waited with {detail:?}");
}

/// The connections formula (`ServeConfig::connections`) bounds what a replica holds
/// under load, and its main pool part is reached: a replica with every role, a pool of
/// four, many concurrent submits and tasks; the database's sessions sampled meanwhile.
#[tokio::test(flavor = "multi_thread")]
async fn a_replica_holds_at_most_the_connections_its_formula_says() {
    #[derive(clap::Parser)]
    struct Flags {
        #[command(flatten)]
        serve: tasklane::config::ServeConfig,
    }
    let args = ["serve", "--pool-size", "4", "--submit-groups", "0"];
    let flags = <Flags as clap::Parser>::try_parse_from(args).expect("the flags parse");
    let formula = flags.serve.connections();
    let db = common::test_db().await;
    let replica = Serve::start(
        &db.url,
        Options {
            task_types: Some(TYPES),
            args: args[1..].iter().map(|a| a.to_string()).collect(),
            ..Default::default()
        },
    )
    .await;
    let api = replica.api(&api::token(&db.url, "count", None, ALL).await);
    let client = db.client().await;
    let stop = CancellationToken::new();
    let mut submitters = Vec::new();
    for worker in 0..16 {
        let (api, stop) = (api.clone(), stop.clone());
        submitters.push(tokio::spawn(async move {
            for n in 0.. {
                let input = json!({"input": {"ms": 1}});
                let key = format!("c{worker}-{n}");
                tokio::select! {
                    _ = api.submit("short", "s", &key, input) => {}
                    _ = stop.cancelled() => return,
                }
            }
        }));
    }
    let sessions = "SELECT count(*) FROM pg_stat_activity
                    WHERE datname = current_database() AND pid <> pg_backend_pid()";
    let mut peak = 0;
    let floor = formula.pool + formula.listens + formula.sampler;
    let started = std::time::Instant::now();
    while peak < floor && started.elapsed() < WITHIN {
        let n: i64 = client.query_one(sessions, &[]).await.unwrap().get(0);
        peak = peak.max(n as usize);
        assert!(
            peak <= formula.total(),
            "{peak} sessions, above the formula's {formula:?} = {}",
            formula.total()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // On for a while more at the peak, still bounded.
    for _ in 0..50 {
        let n: i64 = client.query_one(sessions, &[]).await.unwrap().get(0);
        assert!(
            n as usize <= formula.total(),
            "{n} sessions, above {formula:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.cancel();
    for submitter in submitters {
        submitter.await.unwrap();
    }
    assert!(
        peak >= floor,
        "the main pool, the LISTENs and the sampler ({floor}) were never all open: {peak}"
    );
    println!(
        "connections: peak {peak}, formula {formula:?} = {}",
        formula.total()
    );
}
