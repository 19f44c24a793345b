//! The soak's application: the replicas it runs on, the clients that submit at a fixed
//! rate, the webhook receiver, and the releaser that lets finished work be pruned.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tasklane::load::fleet::Fleet;
use tasklane::load::http_submit::HttpSubmitter;
use tasklane::load::submit::{self, Accepted};
use tasklane::store;
use tasklane::task::SubmitRequest;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::Plan;

pub const APP: &str = "soak";

/// Every 10th accepted task is read back for its pickup.
const PICKUP_SAMPLE: u64 = 10;

/// What the clients, the receiver and the releaser count, taken by the recorder.
#[derive(Default)]
pub struct Shared {
    pub submitted: AtomicU64,
    pub notified: AtomicU64,
    pub released: AtomicU64,
    /// Releases that found no task (none should).
    pub release_misses: AtomicU64,
    pub errors: Mutex<BTreeMap<String, u64>>,
    /// Submit latencies since the recorder last took them.
    pub latencies: Mutex<Vec<Duration>>,
    /// Sampled accepted submits since the recorder last took them.
    pub sampled: Mutex<Vec<Accepted>>,
    /// The load number of each accepted task not released yet (its scope and key).
    keys: Mutex<HashMap<Uuid, u64>>,
    /// Task ids whose notification arrived, not released yet.
    heard: Mutex<Vec<Uuid>>,
}

/// The running soak application.
pub struct App {
    pub fleet: Fleet,
    pub bases: Vec<String>,
    pub shared: Arc<Shared>,
    submitting: CancellationToken,
    clients: Vec<JoinHandle<()>>,
    releasing: CancellationToken,
    releasers: Vec<JoinHandle<anyhow::Result<()>>>,
}

impl App {
    /// A token, the endpoint and its receiver, the replicas, then the clients and the
    /// releaser, on the migrated database at `url`.
    pub async fn start(
        bench: &crate::common::Bench,
        url: &str,
        plan: &Plan,
    ) -> anyhow::Result<App> {
        let client = crate::common::connect(url).await?;
        let token = crate::common::create_token(&bench.bin, url, APP, "submit")?;
        let shared = Arc::new(Shared::default());
        let hook = receive(shared.clone()).await?;
        let events = vec!["task.succeeded".to_owned()];
        let endpoint = store::webhooks::upsert(&client, APP, "soak", &hook, &events).await?;
        let secret = tasklane::webhooks::signature::generate_secret();
        store::webhooks::rotate_secret(&client, endpoint.id, &secret).await?;

        let mut spec = bench.fleet(url, plan.replicas, &plan.serve_args);
        spec.http_base_port = Some(crate::common::free_ports(plan.replicas)?);
        let fleet = Fleet::start(&spec, &client).await?;
        let bases = spec.http_urls();
        let submitter = Arc::new(HttpSubmitter::new(bases.clone(), token)?);
        let run = Uuid::now_v7().simple().to_string();

        let submitting = CancellationToken::new();
        let next = Arc::new(AtomicU64::new(0));
        let t0 = tokio::time::Instant::now();
        let input = match plan.task_type.as_str() {
            "sleep" => serde_json::json!({ "ms": plan.sleep_ms }),
            _ => serde_json::json!({}),
        };
        let clients = (0..plan.clients.max(1))
            .map(|_| {
                let (submitter, shared, next, stop) = (
                    submitter.clone(),
                    shared.clone(),
                    next.clone(),
                    submitting.clone(),
                );
                let (run, input, rate) = (run.clone(), input.clone(), plan.rate);
                let task_type = plan.task_type.clone();
                tokio::spawn(async move {
                    loop {
                        let n = next.fetch_add(1, Ordering::Relaxed);
                        let at = t0 + Duration::from_secs_f64(n as f64 / rate);
                        tokio::select! {
                            _ = tokio::time::sleep_until(at) => {}
                            _ = stop.cancelled() => return,
                        }
                        let request = submit::request(&run, n, &task_type, &input);
                        shared.take_outcome(n, submitter.submit(&request).await);
                    }
                })
            })
            .collect();
        let releasing = CancellationToken::new();
        let releasers = (0..RELEASERS)
            .map(|_| {
                tokio::spawn(release_loop(
                    url.to_owned(),
                    run.clone(),
                    shared.clone(),
                    releasing.clone(),
                ))
            })
            .collect();
        Ok(App {
            fleet,
            bases,
            shared,
            submitting,
            clients,
            releasing,
            releasers,
        })
    }

    /// Stops the clients; returns how many submits were accepted and the refusals by code.
    pub async fn stop_submitting(&mut self) -> (u64, BTreeMap<String, u64>) {
        self.submitting.cancel();
        for client in self.clients.drain(..) {
            let _ = client.await;
        }
        (
            self.shared.submitted.load(Ordering::Relaxed),
            self.shared.errors.lock().unwrap().clone(),
        )
    }

    /// Waits until every accepted task has finished, been notified and been released.
    pub async fn wait_settled(
        &self,
        client: &tokio_postgres::Client,
        limit: Duration,
    ) -> anyhow::Result<()> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let submitted = self.shared.submitted.load(Ordering::Relaxed);
            let released = self.shared.released.load(Ordering::Relaxed);
            let unfinished = tasklane::load::store::unfinished(client).await?;
            if unfinished == 0 && released >= submitted {
                return Ok(());
            }
            anyhow::ensure!(
                tokio::time::Instant::now() < deadline,
                "not settled within {limit:?}: {unfinished} unfinished, {released} of {submitted} released"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    pub async fn stop(self) -> anyhow::Result<()> {
        self.releasing.cancel();
        for releaser in self.releasers {
            releaser.await??;
        }
        self.fleet.stop();
        Ok(())
    }
}

impl Shared {
    fn take_outcome(&self, n: u64, outcome: Result<Accepted, String>) {
        match outcome {
            Ok(accepted) => {
                self.keys.lock().unwrap().insert(accepted.id, n);
                self.latencies.lock().unwrap().push(accepted.latency);
                if n.is_multiple_of(PICKUP_SAMPLE) {
                    self.sampled.lock().unwrap().push(accepted);
                }
                self.submitted.fetch_add(1, Ordering::Relaxed);
            }
            Err(code) => *self.errors.lock().unwrap().entry(code).or_default() += 1,
        }
    }
}

/// A receiver on loopback that notes each notified task's id and answers 204; its URL.
async fn receive(shared: Arc<Shared>) -> anyhow::Result<String> {
    let app = axum::Router::new().fallback(move |body: axum::body::Bytes| {
        let shared = shared.clone();
        async move {
            let id = serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| v["data"]["id"].as_str().and_then(|id| id.parse().ok()));
            if let Some(id) = id {
                shared.heard.lock().unwrap().push(id);
                shared.notified.fetch_add(1, Ordering::Relaxed);
            }
            axum::http::StatusCode::NO_CONTENT
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(url)
}

/// Releases the tasks heard of, at most [`RELEASE_CHUNK`] per transaction, until
/// `stop`; sleeps a moment when none are waiting. Short transactions on purpose: one
/// transaction holding minutes of releases would hold back every vacuum's horizon, and
/// the soak would measure its own releaser. A notification that overtook its submit's
/// answer waits for the next round.
async fn release_loop(
    url: String,
    run: String,
    shared: Arc<Shared>,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let mut client = crate::common::connect(&url).await?;
    while !stop.is_cancelled() {
        let due = shared.take_due(&run);
        if due.is_empty() {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(200)) => {}
                _ = stop.cancelled() => return Ok(()),
            }
            continue;
        }
        let tx = client.transaction().await?;
        let releases = due
            .iter()
            .map(|r| store::lifecycle::release(&tx, APP, &r.scope_id, &r.effect_key, None));
        let released = futures_util::future::try_join_all(releases).await?;
        tx.commit().await?;
        let found = released.iter().filter(|r| r.is_some()).count() as u64;
        shared.released.fetch_add(found, Ordering::Relaxed);
        shared
            .release_misses
            .fetch_add(released.len() as u64 - found, Ordering::Relaxed);
    }
    Ok(())
}

/// Most releases in one transaction.
const RELEASE_CHUNK: usize = 200;

/// Releasers at once: one connection's round trips alone would not keep up with
/// thousands of tasks a second.
pub const RELEASERS: usize = 4;

impl Shared {
    /// Up to [`RELEASE_CHUNK`] heard tasks whose submit answer has come, as the
    /// requests that name their identity; the others go back to wait.
    fn take_due(&self, run: &str) -> Vec<SubmitRequest> {
        let mut heard = self.heard.lock().unwrap();
        let take = heard.len().min(RELEASE_CHUNK);
        let chunk: Vec<Uuid> = heard.drain(..take).collect();
        let mut keys = self.keys.lock().unwrap();
        let mut due = Vec::with_capacity(chunk.len());
        for id in chunk {
            match keys.remove(&id) {
                Some(n) => due.push(submit::request(run, n, "sleep", &serde_json::Value::Null)),
                None => heard.push(id),
            }
        }
        due
    }
}
