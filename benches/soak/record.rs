//! The soak's record: one [`Window`] every 30 s, the comparison of the last 5 minutes
//! with the first 5 after the warm-up, and the plots.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Instant;

use tasklane::load::cpu;
use tasklane::load::stats::Summary;
use tasklane::load::submit::{self, Accepted};
use tasklane::store::load_generator::{self, Relation};

use super::app::App;
use super::Plan;
use crate::common::plot::{self, Chart, Series};

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
    /// Of the sampled tasks submitted in this window, read one window later.
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
    backend: i32,
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
        recorder.last = recorder.counters(app).await?;
        Ok(recorder)
    }

    pub fn windows(&self) -> &[Window] {
        &self.windows
    }

    /// Records the window that ends now, and the pickup of the one before it.
    pub async fn record(&mut self, app: &App) -> anyhow::Result<&Window> {
        let now = self.counters(app).await?;
        let seconds = self.at.elapsed().as_secs_f64().max(1e-6);
        self.at = Instant::now();
        let (last, rate) = (&self.last, |d: f64| d / seconds);
        let completed = now.completed - last.completed;
        let tasks = completed.max(1.0);
        let latencies = std::mem::take(&mut *app.shared.latencies.lock().unwrap());
        let latency = Summary::of(&latencies);
        let relations = load_generator::relations(&self.client).await?;
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
            unfinished: load_generator::unfinished(&self.client).await?,
            webhooks_pending: self
                .metric(app, "tasklane_webhooks_pending", |_| true)
                .await?,
            total_bytes: relations.iter().map(Relation::total_bytes).sum(),
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
            relations: load_generator::relations(&self.client).await?,
        })
    }

    /// Fills the newest window's pickup from its sampled submits' events.
    async fn read_pickup(&mut self) -> anyhow::Result<()> {
        let pending = std::mem::take(&mut self.pending);
        let Some(window) = self.windows.last_mut() else {
            return Ok(());
        };
        let pickup = submit::pickup(&self.client, &pending).await?;
        window.pickup_sampled = pending.len();
        window.pickup_unclaimed = pending.len() - pickup.count;
        if pickup.count > 0 {
            window.pickup_p50_ms = Some(pickup.p50_ms);
            window.pickup_p99_ms = Some(pickup.p99_ms);
        }
        Ok(())
    }

    async fn counters(&self, app: &App) -> anyhow::Result<Counters> {
        let (wal, _, _, _, commits) = load_generator::wal_counters(&self.client).await?;
        let relations = load_generator::relations(&self.client).await?;
        let shared = &app.shared;
        Ok(Counters {
            completed: self
                .metric(app, "tasklane_attempt_duration_seconds_count", |l| {
                    l.contains("outcome=\"succeeded\"")
                })
                .await?,
            not_succeeded: self
                .metric(app, "tasklane_attempt_duration_seconds_count", |l| {
                    !l.contains("outcome=\"succeeded\"")
                })
                .await?,
            pruned: self
                .metric(app, "tasklane_tasks_pruned_total", |_| true)
                .await?,
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

    /// The sum over the replicas of the series of `name` whose labels pass `keep`.
    async fn metric(
        &self,
        app: &App,
        name: &str,
        keep: impl Fn(&str) -> bool,
    ) -> anyhow::Result<f64> {
        let mut sum = 0.0;
        for base in &app.bases {
            let text = self
                .http
                .get(format!("{base}/metrics"))
                .send()
                .await?
                .error_for_status()?
                .text()
                .await?;
            for line in text.lines() {
                let Some(rest) = line.strip_prefix(name) else {
                    continue;
                };
                let labels = match rest.as_bytes().first() {
                    Some(b'{') => &rest[..rest.find('}').map_or(rest.len(), |i| i + 1)],
                    Some(b' ') => "",
                    _ => continue,
                };
                if keep(labels) {
                    sum += line
                        .rsplit(' ')
                        .next()
                        .and_then(|v| v.parse::<f64>().ok())
                        .unwrap_or(0.0);
                }
            }
        }
        Ok(sum)
    }
}

/// The comparison of the run's two ends and the tables printed for RESULTS.
pub struct Outcome {
    pub text: String,
    pub goals: serde_json::Value,
}

/// Windows ending in (from, to] minutes.
fn between(windows: &[Window], from: f64, to: f64) -> Vec<&Window> {
    windows
        .iter()
        .filter(|w| w.end_minutes > from + 1e-6 && w.end_minutes <= to + 1e-6)
        .collect()
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 {
        f64::NAN
    } else {
        sum / n as f64
    }
}

/// The figures compared between the two ends, each a mean over the stretch's windows.
#[derive(Debug, Clone, Copy, serde::Serialize)]
struct Stretch {
    completed_per_second: f64,
    pickup_p99_ms: f64,
    postgres_cpu_ms_per_task: f64,
    total_mib: f64,
}

fn stretch(windows: &[&Window]) -> Stretch {
    Stretch {
        completed_per_second: mean(windows.iter().map(|w| w.completed_per_second)),
        pickup_p99_ms: mean(windows.iter().filter_map(|w| w.pickup_p99_ms)),
        postgres_cpu_ms_per_task: mean(windows.iter().map(|w| w.postgres_cpu_ms_per_task)),
        total_mib: mean(windows.iter().map(|w| w.total_bytes as f64 / 1048576.0)),
    }
}

pub fn summarize(
    plan: &Plan,
    windows: &[Window],
    submitted: u64,
    errors: &BTreeMap<String, u64>,
    tail: &Tail,
) -> anyhow::Result<Outcome> {
    let end = windows.last().map_or(0.0, |w| w.end_minutes);
    let first = stretch(&between(
        windows,
        plan.warmup_minutes,
        plan.warmup_minutes + 5.0,
    ));
    let last = stretch(&between(windows, end - 5.0, end));
    let mut out = String::new();
    use std::fmt::Write as _;
    writeln!(
        out,
        "accepted {submitted} submits; refused {errors:?}; releases that found no task {}",
        tail.release_misses
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "| minutes | completions/s | submits/s | pickup p50 / p99 ms (worst p99) | submit p99 ms | PostgreSQL ms/task (cores) | replica cores | WAL B/task | commits/task | unfinished max | pruned/s | tables MiB at end | dead tuples at end | autovacuums |"
    )?;
    writeln!(out, "|{}", "---|".repeat(14))?;
    let mut from = 0.0;
    while from < end - 1e-6 {
        let part = between(windows, from, from + 5.0);
        let m = |f: fn(&Window) -> f64| mean(part.iter().map(|w| f(w)));
        let p = |f: fn(&Window) -> Option<f64>| mean(part.iter().filter_map(|w| f(w)));
        let worst = part
            .iter()
            .filter_map(|w| w.pickup_p99_ms)
            .fold(f64::NAN, f64::max);
        let last_window = part.last().copied().cloned().unwrap_or_default();
        writeln!(
            out,
            "| {:.0}–{:.0} | {:.0} | {:.0} | {:.1} / {:.1} ({:.1}) | {:.1} | {:.3} ({:.2}) | {:.2} | {:.0} | {:.3} | {} | {:.0} | {:.1} | {} | {} |",
            from,
            (from + 5.0).min(end),
            m(|w| w.completed_per_second),
            m(|w| w.submitted_per_second),
            p(|w| w.pickup_p50_ms),
            p(|w| w.pickup_p99_ms),
            worst,
            m(|w| w.submit_p99_ms),
            m(|w| w.postgres_cpu_ms_per_task),
            m(|w| w.postgres_cores),
            m(|w| w.replica_cores),
            m(|w| w.wal_bytes_per_task),
            m(|w| w.commits_per_task),
            part.iter().map(|w| w.unfinished).max().unwrap_or(0),
            m(|w| w.pruned_per_second),
            last_window.total_bytes as f64 / 1048576.0,
            last_window.dead_tuples,
            part.iter().map(|w| w.autovacuums).sum::<i64>(),
        )?;
        from += 5.0;
    }
    writeln!(out)?;
    writeln!(
        out,
        "| table | heap / indexes / TOAST MiB, end of warm-up | the same, end of run | dead tuples at the end | autovacuums / tasklane's vacuums in the run |"
    )?;
    writeln!(out, "|---|---|---|---|---|")?;
    let at_warmup = between(windows, 0.0, plan.warmup_minutes)
        .last()
        .map(|w| w.relations.clone())
        .unwrap_or_default();
    let at_end = windows
        .last()
        .map(|w| w.relations.clone())
        .unwrap_or_default();
    let mib = |b: i64| b as f64 / 1048576.0;
    for r in &at_end {
        let before = at_warmup
            .iter()
            .find(|b| b.name == r.name)
            .cloned()
            .unwrap_or_default();
        if r.total_bytes() < 64 * 1024 && before.total_bytes() < 64 * 1024 {
            continue;
        }
        writeln!(
            out,
            "| {} | {:.2} / {:.2} / {:.2} | {:.2} / {:.2} / {:.2} | {} | {} / {} |",
            r.name,
            mib(before.heap_bytes),
            mib(before.index_bytes),
            mib(before.toast_bytes),
            mib(r.heap_bytes),
            mib(r.index_bytes),
            mib(r.toast_bytes),
            r.dead_tuples,
            r.autovacuums,
            r.vacuums,
        )?;
    }
    let ratio = |a: f64, b: f64| a / b;
    let within = |r: f64| (0.9..=1.1).contains(&r);
    let met = |ok: bool| if ok { "met" } else { "missed" };
    let throughput = ratio(last.completed_per_second, first.completed_per_second);
    let pickup = ratio(last.pickup_p99_ms, first.pickup_p99_ms);
    let cpu = ratio(
        last.postgres_cpu_ms_per_task,
        first.postgres_cpu_ms_per_task,
    );
    let size = ratio(last.total_mib, first.total_mib);
    writeln!(out)?;
    writeln!(
        out,
        "last 5 minutes ÷ first 5 after the {:.0}-minute warm-up: completions/s {throughput:.3} ({}), pickup p99 {pickup:.3} ({}), PostgreSQL CPU a task {cpu:.3} ({}), tables and indexes {size:.3} ({})",
        plan.warmup_minutes,
        met(within(throughput)),
        met(pickup <= 1.1),
        met(cpu <= 1.1),
        met(size <= 1.1),
    )?;
    Ok(Outcome {
        text: out,
        goals: serde_json::json!({
            "first": first, "last": last,
            "completions_ratio": throughput, "pickup_p99_ratio": pickup,
            "postgres_cpu_per_task_ratio": cpu, "size_ratio": size,
        }),
    })
}

/// Draws the soak's curves; returns the files written.
pub fn plot(dir: &Path, windows: &[Window]) -> anyhow::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    let x = |w: &Window| w.end_minutes;
    let curve = |name: &str, f: &dyn Fn(&Window) -> Option<f64>| {
        Series::new(
            name,
            windows.iter().filter_map(|w| Some((x(w), f(w)?))).collect(),
        )
    };
    let mut chart = |file: &str,
                     title: &str,
                     y: &str,
                     log_y: bool,
                     series: Vec<Series>|
     -> anyhow::Result<()> {
        let path = dir.join(file);
        plot::lines(
            &path,
            &Chart {
                title,
                x_label: "minutes",
                y_label: y,
                log_y,
            },
            &series,
        )?;
        written.push(path);
        Ok(())
    };
    chart(
        "soak-throughput.png",
        "Tasks a second, every 30 s",
        "tasks/s",
        false,
        vec![
            curve("completed", &|w| Some(w.completed_per_second)),
            curve("submitted", &|w| Some(w.submitted_per_second)),
            curve("notified", &|w| Some(w.notified_per_second)),
            curve("released", &|w| Some(w.released_per_second)),
            curve("pruned", &|w| Some(w.pruned_per_second)),
        ],
    )?;
    chart(
        "soak-latency.png",
        "Pickup (commit to claim) and submit latency",
        "ms (log)",
        true,
        vec![
            curve("pickup p50", &|w| w.pickup_p50_ms),
            curve("pickup p99", &|w| w.pickup_p99_ms),
            curve("submit p50", &|w| Some(w.submit_p50_ms)),
            curve("submit p99", &|w| Some(w.submit_p99_ms)),
        ],
    )?;
    chart(
        "soak-cpu.png",
        "PostgreSQL CPU a completed task (whole server), and commits a task",
        "ms of CPU / commits",
        false,
        vec![
            curve("PostgreSQL ms/task", &|w| Some(w.postgres_cpu_ms_per_task)),
            curve("commits/task", &|w| Some(w.commits_per_task)),
            curve("PostgreSQL cores", &|w| Some(w.postgres_cores)),
            curve("replica cores (both)", &|w| Some(w.replica_cores)),
        ],
    )?;
    let names = busiest(windows);
    let per_table = |f: fn(&Relation) -> f64| -> Vec<Series> {
        names
            .iter()
            .map(|name| {
                curve(name, &|w| {
                    w.relations.iter().find(|r| &r.name == name).map(f)
                })
            })
            .collect()
    };
    let mut sizes = per_table(|r| r.total_bytes() as f64 / 1048576.0);
    sizes.push(curve("all tables", &|w| {
        Some(w.total_bytes as f64 / 1048576.0)
    }));
    chart(
        "soak-sizes.png",
        "Heap + indexes + TOAST of each table",
        "MiB",
        false,
        sizes,
    )?;
    chart(
        "soak-indexes.png",
        "Indexes of each table",
        "MiB",
        false,
        per_table(|r| r.index_bytes as f64 / 1048576.0),
    )?;
    chart(
        "soak-dead-tuples.png",
        "Dead tuples of each table (as the statistics last counted)",
        "dead tuples",
        false,
        per_table(|r| r.dead_tuples as f64),
    )?;
    chart(
        "soak-autovacuum.png",
        "Autovacuum runs of each table since the start",
        "runs",
        false,
        per_table(|r| r.autovacuums as f64),
    )?;
    chart(
        "soak-vacuum.png",
        "tasklane's own vacuums of each table since the start",
        "runs",
        false,
        per_table(|r| r.vacuums as f64),
    )?;
    Ok(written)
}

/// The tables that were ever the largest, at most 6, and the queue's mirror (small, and
/// the one whose dead rows every claim walks).
fn busiest(windows: &[Window]) -> Vec<String> {
    let mut peak: BTreeMap<String, i64> = BTreeMap::new();
    for r in windows.iter().flat_map(|w| &w.relations) {
        let e = peak.entry(r.name.clone()).or_default();
        *e = (*e).max(r.total_bytes());
    }
    let mut names: Vec<(String, i64)> = peak.into_iter().collect();
    names.sort_by_key(|(_, bytes)| -bytes);
    let mut names: Vec<String> = names.into_iter().take(6).map(|(n, _)| n).collect();
    if !names.iter().any(|n| n == "task_queue") {
        names.push("task_queue".to_owned());
    }
    names
}
