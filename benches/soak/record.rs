//! The soak's record: one [`Window`] every 30 s.

use std::sync::atomic::Ordering;
use std::time::Instant;

use tasklane::load::cpu;
use tasklane::load::stats::Summary;
use tasklane::load::store::{self as load_store, Relation};
use tasklane::load::submit::Accepted;

use super::app::App;
use crate::common::Scrape;

/// One recorded stretch; rates are over the stretch, sizes at its end.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Window {
    pub end_minutes: f64,
    pub completed_per_second: f64,
    pub not_succeeded_per_second: f64,
    pub submitted_per_second: f64,
    pub notified_per_second: f64,
    pub released_per_second: f64,
    pub pruned_per_second: f64,
    pub submit_p50_ms: f64,
    pub submit_p99_ms: f64,
    /// Of the sampled tasks submitted in this window, read one window later: from the
    /// task's creation to its first claim, both on the database's clock.
    pub pickup_p50_ms: Option<f64>,
    pub pickup_p99_ms: Option<f64>,
    pub pickup_sampled: usize,
    /// Sampled tasks still unclaimed one window after their window ended.
    pub pickup_unclaimed: usize,
    pub postgres_cores: f64,
    pub postgres_cpu_ms_per_task: f64,
    pub replica_cores: f64,
    pub replica_rss_mib: Vec<f64>,
    pub wal_bytes_per_task: f64,
    pub commits_per_task: f64,
    pub unfinished: i64,
    pub webhooks_pending: f64,
    pub total_bytes: i64,
    /// Rows in the tasks table at the window's end (the statistics' count of live rows).
    pub retained_tasks: i64,
    pub dead_tuples: i64,
    pub autovacuums: i64,
    pub relations: Vec<Relation>,
}

/// Cumulative counters at one moment.
#[derive(Debug, Clone, Default)]
struct Counters {
    completed: f64,
    not_succeeded: f64,
    pruned: f64,
    submitted: u64,
    notified: u64,
    released: u64,
    postgres_cpu: f64,
    replica_cpu: f64,
    wal: f64,
    commits: i64,
    autovacuums: i64,
}

pub struct Recorder {
    pub client: tokio_postgres::Client,
    http: reqwest::Client,
    /// A backend of the server, to read its processes by.
    pub backend: i32,
    started: Instant,
    at: Instant,
    last: Counters,
    windows: Vec<Window>,
    /// The previous window's sampled submits, read back at the next record.
    pending: Vec<Accepted>,
}

/// The end of a run, once everything submitted is settled.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Tail {
    pub release_misses: u64,
    pub relations: Vec<Relation>,
}

impl Recorder {
    pub async fn start(url: &str, app: &App) -> anyhow::Result<Recorder> {
        let client = crate::common::connect(url).await?;
        let backend: i32 = client
            .query_one("SELECT pg_backend_pid()", &[])
            .await?
            .get(0);
        anyhow::ensure!(
            cpu::server_seconds(backend).is_some(),
            "the soak reads PostgreSQL's CPU from /proc: run it on the database's machine"
        );
        let mut recorder = Recorder {
            client,
            http: reqwest::Client::new(),
            backend,
            started: Instant::now(),
            at: Instant::now(),
            last: Counters::default(),
            windows: Vec::new(),
            pending: Vec::new(),
        };
        let scrape = Scrape::fetch(&recorder.http, &app.bases).await?;
        let relations = load_store::relations(&recorder.client).await?;
        recorder.last = recorder.counters(app, &scrape, &relations).await?;
        Ok(recorder)
    }

    pub fn windows(&self) -> &[Window] {
        &self.windows
    }

    /// Succeeded attempts counted at the last record.
    pub fn completed(&self) -> f64 {
        self.last.completed
    }

    /// Records the window that ends now, and the pickup of the one before it.
    pub async fn record(&mut self, app: &App) -> anyhow::Result<&Window> {
        let scrape = Scrape::fetch(&self.http, &app.bases).await?;
        let relations = load_store::relations(&self.client).await?;
        let now = self.counters(app, &scrape, &relations).await?;
        let seconds = self.at.elapsed().as_secs_f64().max(1e-6);
        self.at = Instant::now();
        let (last, rate) = (&self.last, |d: f64| d / seconds);
        let completed = now.completed - last.completed;
        let tasks = completed.max(1.0);
        let latencies = std::mem::take(&mut *app.shared.latencies.lock().unwrap());
        let latency = Summary::of(&latencies);
        let mut window = Window {
            end_minutes: self.started.elapsed().as_secs_f64() / 60.0,
            completed_per_second: rate(completed),
            not_succeeded_per_second: rate(now.not_succeeded - last.not_succeeded),
            submitted_per_second: rate((now.submitted - last.submitted) as f64),
            notified_per_second: rate((now.notified - last.notified) as f64),
            released_per_second: rate((now.released - last.released) as f64),
            pruned_per_second: rate(now.pruned - last.pruned),
            submit_p50_ms: latency.p50_ms,
            submit_p99_ms: latency.p99_ms,
            postgres_cores: rate(now.postgres_cpu - last.postgres_cpu),
            postgres_cpu_ms_per_task: (now.postgres_cpu - last.postgres_cpu) * 1000.0 / tasks,
            replica_cores: rate(now.replica_cpu - last.replica_cpu),
            replica_rss_mib: app.fleet.memory().iter().map(|m| m.rss_mib).collect(),
            wal_bytes_per_task: (now.wal - last.wal) / tasks,
            commits_per_task: (now.commits - last.commits) as f64 / tasks,
            unfinished: load_store::unfinished(&self.client).await?,
            webhooks_pending: scrape.sum("tasklane_webhooks_pending", |_| true),
            total_bytes: relations.iter().map(Relation::total_bytes).sum(),
            retained_tasks: relations
                .iter()
                .find(|r| r.name == "tasks")
                .map_or(0, |r| r.live_tuples),
            dead_tuples: relations.iter().map(|r| r.dead_tuples).sum(),
            autovacuums: now.autovacuums - last.autovacuums,
            relations,
            ..Window::default()
        };
        if window.webhooks_pending.is_nan() {
            window.webhooks_pending = 0.0;
        }
        self.last = now;
        let sampled = std::mem::take(&mut *app.shared.sampled.lock().unwrap());
        self.read_pickup().await?;
        self.pending = sampled;
        self.windows.push(window);
        Ok(self.windows.last().expect("just pushed"))
    }

    /// The pickup of the last window's samples, once everything has settled; then the
    /// tables as the run leaves them.
    pub async fn finish(&mut self, app: &App) -> anyhow::Result<Tail> {
        self.read_pickup().await?;
        Ok(Tail {
            release_misses: app.shared.release_misses.load(Ordering::Relaxed),
            relations: load_store::relations(&self.client).await?,
        })
    }

    /// Fills the newest window's pickup from its sampled submits' events.
    async fn read_pickup(&mut self) -> anyhow::Result<()> {
        let pending = std::mem::take(&mut self.pending);
        let Some(window) = self.windows.last_mut() else {
            return Ok(());
        };
        let pickup = pickup(&self.client, &pending).await?;
        window.pickup_sampled = pending.len();
        window.pickup_unclaimed = pending.len() - pickup.count;
        if pickup.count > 0 {
            window.pickup_p50_ms = Some(pickup.p50_ms);
            window.pickup_p99_ms = Some(pickup.p99_ms);
        }
        Ok(())
    }

    /// The counters now, from this moment's `scrape` and `relations`.
    async fn counters(
        &self,
        app: &App,
        scrape: &Scrape,
        relations: &[Relation],
    ) -> anyhow::Result<Counters> {
        let (wal, _, _, _, commits) = load_store::wal_counters(&self.client).await?;
        let shared = &app.shared;
        let succeeded = |l: &str| l.contains("outcome=\"succeeded\"");
        Ok(Counters {
            completed: scrape.sum("tasklane_attempt_duration_seconds_count", succeeded),
            not_succeeded: scrape.sum("tasklane_attempt_duration_seconds_count", |l| !succeeded(l)),
            pruned: scrape.sum("tasklane_tasks_pruned_total", |_| true),
            submitted: shared.submitted.load(Ordering::Relaxed),
            notified: shared.notified.load(Ordering::Relaxed),
            released: shared.released.load(Ordering::Relaxed),
            postgres_cpu: cpu::server_seconds(self.backend).unwrap_or(f64::NAN),
            replica_cpu: app.fleet.total_cpu_seconds(),
            wal,
            commits,
            autovacuums: relations.iter().map(|r| r.autovacuums).sum(),
        })
    }
}

/// The pickup of `accepted` tasks on the database's clock: from each one's creation
/// (its submit's transaction) to its first claim; unclaimed ones are left out.
async fn pickup(client: &tokio_postgres::Client, accepted: &[Accepted]) -> anyhow::Result<Summary> {
    let ids: Vec<uuid::Uuid> = accepted.iter().map(|a| a.id).collect();
    let samples: Vec<std::time::Duration> = load_store::timings(client, &ids)
        .await?
        .into_iter()
        .filter_map(|t| (t.running_at? - t.created_at).to_std().ok())
        .collect();
    Ok(Summary::of(&samples))
}
