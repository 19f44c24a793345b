//! Soak: the lifecycle an app's task goes through, end to end (submit over HTTP, run,
//! webhook, release, pruning), at a steady rate while history is pruned behind it: what
//! a task costs on that path, where the cost goes, and whether it stays flat as the
//! tables turn over. The headline benchmark: a short mode (10 minutes, 2 of them
//! warm-up) for working, and the record mode (30 minutes, 5 of warm-up).
//!
//! Two `tasklane serve` replicas (roles api, worker and maintenance; the bench flags,
//! plus a short retention) on one fresh database of a durable server. The bench:
//!
//! - submits `noop` tasks (or `sleep` tasks of 20 ms) over `POST /v1/tasks` at a fixed
//!   rate (open loop, round robin over the replicas), as an app's request handlers
//!   would;
//! - subscribes one webhook endpoint to `task.succeeded`, answered 204 by a receiver
//!   in this process;
//! - releases each task once its notification arrives, as an app that has stored the
//!   result does (each release through `tasklane.release_task`, on 4 connections, at
//!   most 200 to a transaction), so the pruning sweep deletes it, with its events,
//!   attempts and delivery log, once the retention has passed.
//!
//! Every 30 s it records: completions/s (succeeded attempts, from the replicas'
//! `/metrics`), submits/s and their latency, notifications heard and releases/s,
//! pickup p50/p99 (from commit to claim, every 10th task, read back from its events
//! one window later), PostgreSQL CPU per task (the whole server: backends, autovacuum
//! workers, checkpointer and WAL writer, reaped children included), WAL bytes and
//! commits per task, unfinished tasks, and for every tasklane table its heap, index and
//! TOAST bytes, dead tuples and autovacuum runs. It then draws the curves as PNG
//! (`target/bench-results/soak-*.png`) and compares the last 5 minutes with the first 5
//! after the warm-up.
//!
//! Over the stretch after the warm-up it reports per task: PostgreSQL CPU, WAL bytes,
//! commits, table and index bytes per retained task, submit p50/p99, pickup p50/p99
//! (on the database's clock: created to first claim), and the bill (`soak/bill.rs`):
//! PostgreSQL's time by statement (`pg_stat_statements`, loaded into the private
//! cluster) and its CPU by process (backends, autovacuum, checkpointer, WAL writer).
//! With a held snapshot it also bills each phase of the hold (before it, its two
//! halves, after it), with the pages each statement fetched a call.
//!
//! `cargo bench --bench soak` (env: `BENCH_SOAK_MODE` (`short`: 10 minutes, 2 of
//! warm-up; `record`: 30 and 5), `BENCH_SOAK_MINUTES`, `BENCH_RATE` (2,000
//! submits/s), `BENCH_REPLICAS` (2), `BENCH_CLIENTS` (64), `BENCH_TASK_TYPE` (`noop`), `BENCH_RETENTION_SECONDS`
//! (120), `BENCH_WARMUP_MINUTES`, `BENCH_SERVE_ARGS`, `BENCH_DATABASE_URL`,
//! `BENCH_DURABILITY`, `BENCH_HOLD_SNAPSHOT` (`START:MINUTES`: a REPEATABLE READ
//! snapshot held open from START for MINUTES, see `soak/hold.rs`)).

mod common;

#[path = "soak/app.rs"]
mod app;
#[path = "soak/bill.rs"]
mod bill;
#[path = "soak/headline.rs"]
mod headline;
#[path = "soak/hold.rs"]
mod hold;
#[path = "soak/plots.rs"]
mod plots;
#[path = "soak/record.rs"]
mod record;
#[path = "soak/summary.rs"]
mod summary;

use std::time::Duration;

use record::{Recorder, Window};

/// How often a window is recorded.
const EVERY: Duration = Duration::from_secs(30);

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What the run is asked to do.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Plan {
    pub minutes: f64,
    pub rate: f64,
    pub replicas: usize,
    pub clients: usize,
    /// `noop`, or `sleep` (which also reports progress once, a heartbeat per task).
    pub task_type: String,
    pub sleep_ms: u64,
    pub retention_seconds: u64,
    pub warmup_minutes: f64,
    pub serve_args: Vec<String>,
}

/// The run's length and warm-up in minutes, by `BENCH_SOAK_MODE`, each overridable.
fn length() -> (f64, f64) {
    let (minutes, warmup) = match std::env::var("BENCH_SOAK_MODE").as_deref() {
        Ok("record") => (30.0, 5.0),
        _ => (10.0, 2.0),
    };
    (
        env_or("BENCH_SOAK_MINUTES", minutes),
        env_or("BENCH_WARMUP_MINUTES", warmup),
    )
}

/// Loads `pg_stat_statements` into the private cluster for the bill, unless the
/// settings for studies already name the preloaded libraries.
fn preload_statements() {
    let settings = std::env::var("BENCH_PG_SETTINGS").unwrap_or_default();
    if !settings.contains("shared_preload_libraries") {
        std::env::set_var(
            "BENCH_PG_SETTINGS",
            format!("{settings} shared_preload_libraries=pg_stat_statements"),
        );
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    preload_statements();
    let bench = common::Bench::start().await?;
    let mut serve_args = common::serve_args();
    let retention_seconds = env_or("BENCH_RETENTION_SECONDS", 120);
    serve_args.extend([
        "--retention-seconds".into(),
        retention_seconds.to_string(),
        "--webhook-allow-cidrs".into(),
        "127.0.0.0/8".into(),
    ]);
    let (minutes, warmup_minutes) = length();
    let plan = Plan {
        minutes,
        rate: env_or("BENCH_RATE", 2_000.0),
        replicas: env_or("BENCH_REPLICAS", 2),
        clients: env_or("BENCH_CLIENTS", 64),
        task_type: std::env::var("BENCH_TASK_TYPE").unwrap_or_else(|_| "noop".into()),
        sleep_ms: 20,
        retention_seconds,
        warmup_minutes,
        serve_args,
    };
    println!("machine: {}", common::machine());
    println!("postgres: {}", bench.settings().await?);
    println!("plan: {}", serde_json::to_string(&plan)?);

    let (name, url) = bench.fresh_db().await?;
    let mut app = app::App::start(&bench, &url, &plan).await?;
    let mut recorder = Recorder::start(&url, &app).await?;
    let mut meter = bill::Meter::start(bench.server.url(), &name, &url, recorder.backend).await?;
    let held = hold::spawn(&url);
    let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(plan.minutes * 60.0);
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + EVERY, EVERY);
    let warm = (plan.warmup_minutes * 60.0 / EVERY.as_secs_f64()).round() as usize;
    if warm == 0 {
        meter.mark(recorder.completed()).await?;
    }
    let phases = hold::phases();
    let mut readings = Vec::new();
    while tokio::time::Instant::now() < deadline {
        tick.tick().await;
        recorder.record(&app).await?;
        println!("{}", recorder.line());
        if recorder.windows().len() == warm {
            meter.mark(recorder.completed()).await?;
        }
        if !phases.is_empty() {
            let minutes = recorder.windows().last().map_or(0.0, |w| w.end_minutes);
            readings.push((minutes, meter.read(recorder.completed()).await));
        }
    }
    let phase_bills = phase_bills(&meter, &phases, &readings);
    let bill = meter.close(recorder.completed()).await?;
    let (submitted, errors) = app.stop_submitting().await;
    if let Some(held) = held {
        held.abort();
    }
    app.wait_settled(&recorder.client, Duration::from_secs(300))
        .await?;
    let tail = recorder.finish(&app).await?;
    let summary = summary::summarize(&plan, recorder.windows(), submitted, &errors, &tail)?;
    let headline = headline::headline(&plan, recorder.windows(), &bill)?;
    println!();
    println!("{}", headline.text);
    println!("{}", summary.text);
    for (label, from, to, bill) in &phase_bills {
        let mut text = String::new();
        headline::bill_text(&mut text, bill, 12)?;
        println!("\n### The bill {label} ({from:.1}–{to:.1} min)\n\n{text}");
    }
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-results");
    std::fs::create_dir_all(&dir)?;
    for path in plots::plot(&dir, recorder.windows())? {
        println!("plot: {}", path.display());
    }
    common::write_json(
        "soak",
        &serde_json::json!({
            "machine": common::machine(),
            "postgres": bench.settings().await?,
            "plan": plan,
            "submitted": submitted,
            "errors": errors,
            "tail": tail,
            "goals": summary.goals,
            "headline": headline.figures,
            "bill": bill,
            "bill_by_phase": phase_bills,
            "windows": recorder.windows(),
        }),
    )?;
    drop(recorder);
    app.stop().await?;
    bench.drop_db(&name).await?;
    bench.stop().await;
    Ok(())
}

/// The bill of each phase, between the readings nearest its ends (window ends, in
/// minutes), as (label, from, to, bill); a phase the run did not reach is left out.
fn phase_bills(
    meter: &bill::Meter,
    phases: &[(&'static str, f64, f64)],
    readings: &[(f64, bill::Reading)],
) -> Vec<(&'static str, f64, f64, bill::Bill)> {
    let nearest = |minute: f64| {
        readings
            .iter()
            .min_by(|a, b| (a.0 - minute).abs().total_cmp(&(b.0 - minute).abs()))
    };
    phases
        .iter()
        .filter_map(|&(label, from, to)| {
            let (a, b) = (nearest(from)?, nearest(to)?);
            (b.0 > a.0 && b.0 >= to - EVERY.as_secs_f64() / 60.0)
                .then(|| (label, a.0, b.0, meter.between(&a.1, &b.1)))
        })
        .collect()
}

impl Recorder {
    /// The newest window, with the pickup of the one before it (read one window late).
    fn line(&self) -> String {
        let windows = self.windows();
        let Some(w) = windows.last() else {
            return String::new();
        };
        let before = windows.len().checked_sub(2).map(|i| &windows[i]);
        let pickup = |f: fn(&Window) -> Option<f64>| {
            before
                .and_then(f)
                .map_or_else(|| "-".to_owned(), |ms| format!("{ms:.1}"))
        };
        format!(
            "[{:>5.1} min] {:>6.0} done/s {:>6.0} submitted/s (pickup before: p50 {} p99 {} ms) \
             pg {:.3} ms/task {:.2} cores  unfinished {}  tables {:.1} MiB  dead {}  autovacuums {}",
            w.end_minutes,
            w.completed_per_second,
            w.submitted_per_second,
            pickup(|w| w.pickup_p50_ms),
            pickup(|w| w.pickup_p99_ms),
            w.postgres_cpu_ms_per_task,
            w.postgres_cores,
            w.unfinished,
            w.total_bytes as f64 / 1048576.0,
            w.dead_tuples,
            w.autovacuums,
        )
    }
}
