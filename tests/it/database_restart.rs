//! PostgreSQL restarted under running replicas (`pg_ctl restart -m immediate`), and the
//! LISTEN connections alone killed (`pg_terminate_backend`), each three times, over TLS
//! (a cluster that takes TLS only) and without. After every fault, for a watch window:
//! each replica's resident memory stays under [`RSS_BOUND`] and no replica exits; every
//! LISTEN comes back; a task submitted after the fault reaches the worker replica and
//! succeeds. Submits flow throughout, and every acknowledged task succeeds in the end.
//!
//! The worker replica polls for work only every ten minutes, so within the test's bounds
//! a task reaches it only by a wake-up: the API replica's NOTIFY, or the re-read when
//! its own LISTEN comes back.

use crate::common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::api::{self, Api, ALL};
use common::eventually;
use common::serve::{Options, Serve};
use common::tls_cluster;
use serde_json::json;
use tasklane::devdb::{ClusterOptions, PrivateCluster};
use tasklane::store::{EVENTS_CHANNEL, WAKEUP_CHANNEL};
use tokio_util::sync::CancellationToken;

/// In MiB: far above a replica's normal few tens, far below a runaway's gigabytes.
const RSS_BOUND: f64 = 200.0;
/// How long memory and liveness are watched after each restart.
const RESTART_WATCH: Duration = Duration::from_secs(30);
/// How long they are watched after each kill of the LISTEN connections.
const KILL_WATCH: Duration = Duration::from_secs(10);
const FAULTS: usize = 3;
/// The worker replica's poll interval: longer than any bound here.
const WORKER_POLL_MS: &str = "600000";
/// How long a task submitted after a fault may take to succeed (it waits for the
/// database, then for the LISTEN or a rescue): generous, for a loaded machine.
const PROBE_WITHIN: Duration = Duration::from_secs(90);

/// Tasks claimed when the server went away come back after their lease and run again.
const TYPES: &str = r#"
[[task_type]]
name = "noop"
executor = "noop"
lease_seconds = 5
max_attempts = 10
on_restart = "retry"
"#;

/// One private cluster with an API replica and a worker replica on it, and a stream of
/// submits.
struct Site {
    what: &'static str,
    cluster: Arc<PrivateCluster>,
    url: String,
    api_replica: Serve,
    worker: Serve,
    api: Api,
    acknowledged: Arc<Mutex<Vec<String>>>,
    stop_flow: CancellationToken,
}

impl Site {
    async fn start(tls: bool) -> Site {
        let what = if tls { "over TLS" } else { "without TLS" };
        let cluster = tokio::task::spawn_blocking(move || {
            // Durable: a crash of a server with synchronous_commit off loses commits it
            // acknowledged, which would fail the count below for PostgreSQL's reasons.
            if tls {
                tls_cluster::start(true)
            } else {
                PrivateCluster::start_with(&ClusterOptions {
                    durable: true,
                    ..ClusterOptions::default()
                })
            }
        })
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("start a cluster {what}: {e:#}"));
        let port = tls_cluster::port(&cluster);
        let sslmode = if tls { "require" } else { "disable" };
        let admin = format!("postgres://postgres@127.0.0.1:{port}/postgres?sslmode={sslmode}");
        tasklane::store::connect::connect(&admin)
            .await
            .expect("connect to the new cluster")
            .batch_execute("CREATE DATABASE restarts")
            .await
            .expect("create the database");
        let url = format!("postgres://postgres@127.0.0.1:{port}/restarts?sslmode={sslmode}");
        tasklane::store::migrate::run(&url).await.expect("migrate");
        let api_replica = Serve::start(
            &url,
            Options {
                roles: Some("api"),
                task_types: Some(TYPES),
                ..Default::default()
            },
        )
        .await;
        let worker = Serve::workers(
            &url,
            "worker",
            TYPES,
            &["--poll-interval-ms", WORKER_POLL_MS],
        );
        let api = api_replica.api(&api::token(&url, "restarts", None, ALL).await);
        let site = Site {
            what,
            cluster: Arc::new(cluster),
            url,
            api_replica,
            worker,
            api,
            acknowledged: Arc::default(),
            stop_flow: CancellationToken::new(),
        };
        site.start_flow();
        site
    }

    /// Submits a task every 50 ms until stopped, keeping the ids acknowledged. Refusals
    /// while the database is away are expected: they acknowledge nothing.
    fn start_flow(&self) {
        let (api, acknowledged, stop) = (
            self.api.clone(),
            self.acknowledged.clone(),
            self.stop_flow.clone(),
        );
        tokio::spawn(async move {
            for n in 0.. {
                let key = format!("flow-{n}");
                let submitted = api.submit("noop", "flow", &key, json!({}));
                tokio::select! {
                    answer = submitted => {
                        if answer.status == 202 {
                            let id = answer.body["id"].as_str().expect("an id").to_owned();
                            acknowledged.lock().unwrap().push(id);
                        }
                    }
                    _ = stop.cancelled() => return,
                }
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(50)) => {}
                    _ = stop.cancelled() => return,
                }
            }
        });
    }

    /// The LISTEN statements of this database's sessions, counted by statement.
    async fn listens(&self) -> Result<BTreeMap<String, i64>, String> {
        let client = tasklane::store::connect::connect(&self.url)
            .await
            .map_err(|e| format!("{e:#}"))?;
        let rows = client
            .query(
                "SELECT query, count(*) FROM pg_stat_activity
                 WHERE datname = current_database() AND query LIKE 'LISTEN %'
                 GROUP BY query",
                &[],
            )
            .await
            .map_err(|e| e.to_string())?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    /// Waits until every LISTEN in `want` is held again, as many times as in `want`.
    async fn until_listening(&self, want: &BTreeMap<String, i64>) {
        let what = format!("the replicas' LISTENs back {}", self.what);
        eventually(PROBE_WITHIN, &what, || async {
            let seen = self.listens().await?;
            let back = want
                .iter()
                .all(|(query, n)| seen.get(query).is_some_and(|m| m >= n));
            if back {
                Ok(())
            } else {
                Err(format!("{seen:?}"))
            }
        })
        .await
    }

    /// Submits a task (retrying while the database is away) and waits until it
    /// succeeds: the API replica took it and a wake-up brought it to the worker.
    async fn probe(&self, key: &str) {
        let what = format!("a task submitted {} acknowledged", self.what);
        let id = eventually(PROBE_WITHIN, &what, || async {
            let answer = self.api.submit("noop", "probe", key, json!({})).await;
            match answer.status {
                202 => Ok(answer.body["id"].as_str().expect("an id").to_owned()),
                _ => Err(answer.body),
            }
        })
        .await;
        let what = format!("task {key} submitted {} to succeed", self.what);
        eventually(PROBE_WITHIN, &what, || async {
            let answer = self.api.get(&format!("/v1/tasks/{id}")).await;
            if answer.body["state"] == "succeeded" {
                Ok(())
            } else {
                Err(answer.body)
            }
        })
        .await
    }

    /// Fails the test if a replica exited or holds more than [`RSS_BOUND`]; the larger
    /// of the two RSS figures.
    fn check_replicas(&self) -> f64 {
        let mut largest: f64 = 0.0;
        for replica in [&self.api_replica, &self.worker] {
            let rss = replica.rss_mib();
            assert!(
                rss < RSS_BOUND,
                "a replica {} holds {rss:.0} MiB, bound {RSS_BOUND} MiB",
                self.what,
            );
            largest = largest.max(rss);
        }
        largest
    }

    /// Every acknowledged task ends succeeded (bounded), once the flow is stopped.
    async fn all_acknowledged_succeed(&self) {
        self.stop_flow.cancel();
        let ids = self.acknowledged.lock().unwrap().clone();
        assert!(!ids.is_empty(), "no submit was acknowledged {}", self.what);
        let client = tasklane::store::connect::connect(&self.url).await.unwrap();
        let what = format!("{} acknowledged tasks {} to succeed", ids.len(), self.what);
        eventually(PROBE_WITHIN, &what, || async {
            let row = client
                .query_one(
                    "SELECT count(*), count(*) FILTER (WHERE state <> 'succeeded')
                     FROM tasklane.tasks WHERE id = ANY($1::text[]::uuid[])",
                    &[&ids],
                )
                .await
                .unwrap();
            let (found, not_yet): (i64, i64) = (row.get(0), row.get(1));
            assert_eq!(
                found,
                ids.len() as i64,
                "an acknowledged task is gone {}",
                self.what
            );
            if not_yet == 0 {
                Ok(())
            } else {
                Err(format!("{not_yet} not succeeded"))
            }
        })
        .await
    }
}

/// One fault on `site`, then the watch: memory and liveness sampled every 100 ms until
/// the fault's watch has passed and the LISTENs are back and a probe task has succeeded.
async fn fault_and_watch(site: &Site, fault: Fault, round: usize) -> f64 {
    let listening = site.listens().await.expect("read the LISTENs");
    let started = tokio::time::Instant::now();
    fault.apply(site).await;
    let watch = fault.watch();
    let mut peak = site.check_replicas();
    let recovered = async {
        site.until_listening(&listening).await;
        site.probe(&format!("probe-{round}")).await;
    };
    tokio::pin!(recovered);
    let mut done = false;
    // The watch window is a duration to observe over, not a wait for an event.
    let mut ticks = tokio::time::interval(Duration::from_millis(100));
    while !done || started.elapsed() < watch {
        tokio::select! {
            () = &mut recovered, if !done => done = true,
            _ = ticks.tick() => {}
        }
        peak = peak.max(site.check_replicas());
    }
    peak
}

/// What goes wrong, and how long memory and liveness are watched after it.
#[derive(Clone, Copy)]
enum Fault {
    /// `pg_ctl restart -m immediate`: every session ends without a goodbye.
    Restart,
    /// `pg_terminate_backend` of every LISTEN session, the rest left alone.
    KillListens,
}

impl Fault {
    fn watch(self) -> Duration {
        match self {
            Fault::Restart => RESTART_WATCH,
            Fault::KillListens => KILL_WATCH,
        }
    }

    async fn apply(self, site: &Site) {
        match self {
            Fault::Restart => {
                let cluster = site.cluster.clone();
                tokio::task::spawn_blocking(move || cluster.restart_immediate())
                    .await
                    .unwrap()
                    .expect("restart PostgreSQL");
            }
            Fault::KillListens => {
                let client = tasklane::store::connect::connect(&site.url).await.unwrap();
                let killed: i64 = client
                    .query_one(
                        "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
                         FROM pg_stat_activity
                         WHERE datname = current_database() AND query LIKE 'LISTEN %'",
                        &[],
                    )
                    .await
                    .unwrap()
                    .get(0);
                assert!(killed >= 2, "killed {killed} LISTEN sessions {}", site.what);
            }
        }
    }
}

/// Runs [`FAULTS`] rounds of `fault` on a site over TLS and one without, side by side.
async fn survive(fault: Fault) {
    let (tls, plain) = tokio::join!(Site::start(true), Site::start(false));
    let wanted = [WAKEUP_CHANNEL, EVENTS_CHANNEL].map(|channel| (format!("LISTEN {channel}"), 1));
    for site in [&tls, &plain] {
        site.until_listening(&wanted.clone().into_iter().collect())
            .await;
        site.probe("before").await;
    }
    for round in 0..FAULTS {
        let (tls_peak, plain_peak) = tokio::join!(
            fault_and_watch(&tls, fault, round),
            fault_and_watch(&plain, fault, round)
        );
        eprintln!(
            "fault {round}: peak RSS {tls_peak:.0} MiB over TLS, {plain_peak:.0} MiB without"
        );
    }
    tokio::join!(
        tls.all_acknowledged_succeed(),
        plain.all_acknowledged_succeed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_survive_postgresql_restarts_with_bounded_memory() {
    survive(Fault::Restart).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_survive_their_listen_connections_killed_with_bounded_memory() {
    survive(Fault::KillListens).await;
}
