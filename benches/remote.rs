//! Remote workers beside the built-in executor, on a durable PostgreSQL: what a worker
//! speaking the worker protocol over HTTP costs against the replica's own workers.
//!
//! 1. `drain`: `BENCH_TASKS` (50,000) queued `remote` no-op tasks drained by
//!    `BENCH_WORKERS` (8) remote workers of the load generator (`src/load/remote.rs`:
//!    claims of `max` 100, batched completions), beside the in-process drain of as many
//!    `noop` tasks, interleaved, `BENCH_RUNS` (3) rounds: tasks/s, the whole PostgreSQL
//!    server's CPU per task, WAL and commits per task (`remote/drain.rs`).
//! 2. `python`: one Python worker process (the client's `Worker`, concurrency
//!    `BENCH_PY_CONCURRENCY` (64)) drains `BENCH_PY_TASKS` (20,000) remote tasks, each
//!    round (`remote/python.rs`).
//! 3. `heartbeats`: `BENCH_IN_FLIGHT` (1,000) remote tasks in flight, heartbeaten in
//!    batches every third of their lease for `BENCH_HEARTBEAT_SECONDS` (60): the
//!    server's CPU, beside the replica idle as long, once (`remote/heartbeats.rs`).
//! 4. `output`: `BENCH_STREAMS` (100) remote tasks streaming `BENCH_CHUNKS` (200)
//!    chunks `BENCH_CHUNK_MS` (20) apart through replica A, sent every `BENCH_ROUND_MS`
//!    (20) in one batched write, observed on replica B: chunk latency p50/p99 from the
//!    request and from the chunk's production, commits per attempt, WAL per chunk, each
//!    round (`remote/output.rs`).
//!
//! `cargo bench --bench remote` (env: `BENCH_PARTS` (comma-separated, default all),
//! the sizes above, `BENCH_RUNS`, `BENCH_SERVE_ARGS`, `BENCH_DATABASE_URL`; see
//! benches/RESULTS.md).

mod common;

#[path = "remote/drain.rs"]
mod drain;
#[path = "remote/heartbeats.rs"]
mod heartbeats;
#[path = "remote/output.rs"]
mod output;
#[path = "remote/python.rs"]
mod python;

use tasklane::load::stats::Repeated;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn wanted(part: &str) -> bool {
    std::env::var("BENCH_PARTS")
        .map(|parts| parts.split(',').any(|p| p.trim() == part))
        .unwrap_or(true)
}

/// Every round's figures of parts 1, 2 and 4.
#[derive(Default, serde::Serialize)]
struct Rounds {
    in_process: Vec<drain::Figures>,
    remote: Vec<drain::Figures>,
    python: Vec<python::Figures>,
    output: Vec<serde_json::Value>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let bench = common::Bench::start().await?;
    let tasks: i64 = env_or("BENCH_TASKS", 50_000);
    let workers: usize = env_or("BENCH_WORKERS", 8);
    let py_tasks: i64 = env_or("BENCH_PY_TASKS", 20_000);
    let py_concurrency: usize = env_or("BENCH_PY_CONCURRENCY", 64);
    let shape = output::Shape {
        streams: env_or("BENCH_STREAMS", 100),
        chunks: env_or("BENCH_CHUNKS", 200),
        chunk_ms: env_or("BENCH_CHUNK_MS", 20),
        round_ms: env_or("BENCH_ROUND_MS", 20),
    };
    println!("machine: {}", common::machine());
    println!("postgres: {}", bench.settings().await?);
    println!("replica flags: {:?}", common::serve_args());
    let python = if wanted("python") {
        Some(python::python()?)
    } else {
        None
    };
    let mut rounds = Rounds::default();
    for run in 1..=common::runs() {
        println!("run {run}: load {}", common::load_average());
        if wanted("drain") {
            let inside = drain::in_process(&bench, tasks).await?;
            println!("run {run}: in-process drain of {tasks} noop: {inside}");
            let remote = drain::remote(&bench, tasks, workers).await?;
            println!("run {run}: remote drain of {tasks} by {workers} HTTP workers: {remote}");
            println!(
                "run {run}: remote ÷ in-process: tasks/s {:.2}, PostgreSQL CPU a task {:.2}",
                remote.tasks_per_second / inside.tasks_per_second,
                remote.postgres_cpu_ms_per_task / inside.postgres_cpu_ms_per_task
            );
            rounds.in_process.push(inside);
            rounds.remote.push(remote);
        }
        if let Some(python) = &python {
            let figures = python::drain(&bench, python, py_tasks, py_concurrency).await?;
            println!("run {run}: one Python worker, concurrency {py_concurrency}, {py_tasks} remote: {figures}");
            rounds.python.push(figures);
        }
        if wanted("output") {
            let figures = output::measure(&bench, shape).await?;
            println!(
                "run {run}: {} streams of {} chunks: {figures}",
                shape.streams, shape.chunks
            );
            rounds.output.push(figures);
        }
        println!("run {run}: done, load {}", common::load_average());
    }
    let beats = if wanted("heartbeats") {
        let in_flight: i64 = env_or("BENCH_IN_FLIGHT", 1_000);
        let seconds: u64 = env_or("BENCH_HEARTBEAT_SECONDS", 60);
        let (idle, beating, every) = heartbeats::measure(&bench, in_flight, seconds).await?;
        println!("idle replica, nothing in flight: {idle}");
        println!(
            "{in_flight} remote tasks in flight, batched heartbeats every {every:.1} s: {beating}"
        );
        println!("load {}", common::load_average());
        Some(
            serde_json::json!({"in_flight": in_flight, "every_seconds": every, "idle": idle, "beating": beating}),
        )
    } else {
        None
    };
    summarize(&rounds);
    common::write_json(
        "remote",
        &serde_json::json!({
            "machine": common::machine(),
            "postgres": bench.settings().await?,
            "serve_args": common::serve_args(),
            "tasks": tasks, "workers": workers, "python_tasks": py_tasks,
            "python_concurrency": py_concurrency, "output_shape": shape,
            "rounds": rounds, "heartbeats": beats,
        }),
    )?;
    bench.stop().await;
    Ok(())
}

fn each(values: &[f64], digits: usize) -> String {
    values
        .iter()
        .map(|v| format!("{v:.digits$}"))
        .collect::<Vec<_>>()
        .join(" / ")
}

fn median(values: &[f64]) -> f64 {
    Repeated::of(values.to_vec(), true).median()
}

/// The tables of the rounds: medians, every round, and the same-round ratios.
fn summarize(rounds: &Rounds) {
    if !rounds.remote.is_empty() {
        println!();
        println!("| drain | tasks/s (median; rounds) | PostgreSQL CPU ms a task | WAL B a task | commits / 1,000 tasks |");
        println!("|---|---|---|---|---|");
        for (name, figures) in [
            ("in-process", &rounds.in_process),
            ("remote, HTTP workers", &rounds.remote),
        ] {
            let pick = |f: fn(&drain::Figures) -> f64| figures.iter().map(f).collect::<Vec<_>>();
            let rate = pick(|f| f.tasks_per_second);
            println!(
                "| {name} | {:.0} ({}) | {:.3} ({}) | {:.0} | {:.1} |",
                median(&rate),
                each(&rate, 0),
                median(&pick(|f| f.postgres_cpu_ms_per_task)),
                each(&pick(|f| f.postgres_cpu_ms_per_task), 3),
                median(&pick(|f| f.wal.wal_bytes_per_task)),
                median(&pick(|f| f.wal.commits_per_1000_tasks)),
            );
        }
        let ratio = |f: fn(&drain::Figures) -> f64| -> Vec<f64> {
            rounds
                .remote
                .iter()
                .zip(&rounds.in_process)
                .map(|(r, i)| f(r) / f(i))
                .collect()
        };
        let rate = ratio(|f| f.tasks_per_second);
        let cpu = ratio(|f| f.postgres_cpu_ms_per_task);
        println!(
            "remote ÷ in-process, same round: tasks/s median {:.2} ({}), PostgreSQL CPU a task median {:.2} ({})",
            median(&rate),
            each(&rate, 2),
            median(&cpu),
            each(&cpu, 2)
        );
    }
    if !rounds.python.is_empty() {
        let rate: Vec<f64> = rounds.python.iter().map(|f| f.tasks_per_second).collect();
        let cpu: Vec<f64> = rounds
            .python
            .iter()
            .map(|f| f.worker_cpu_ms_per_task)
            .collect();
        println!();
        println!(
            "one Python worker: median {:.0} tasks/s ({}), its CPU ms a task {}",
            median(&rate),
            each(&rate, 0),
            each(&cpu, 3)
        );
    }
    if !rounds.output.is_empty() {
        println!();
        println!("| remote live output, A → B | value per run |");
        println!("|---|---|");
        for key in [
            "latency_p50_ms",
            "latency_p99_ms",
            "from_production_p50_ms",
            "from_production_p99_ms",
            "write_request_p50_ms",
            "write_request_p99_ms",
            "chunks_seen",
            "streams_missing_chunks",
            "control_streams_missing_chunks_on_a",
            "missing_first_index_median",
            "missing_last_index_median",
            "chunks_per_second",
            "requests_per_second",
            "items_per_request",
            "commits_per_attempt",
            "wal_bytes_per_attempt",
            "commits_per_chunk_while_streaming",
            "wal_bytes_per_chunk_while_streaming",
            "task_output_writes_per_attempt",
        ] {
            let values: Vec<String> = rounds
                .output
                .iter()
                .map(|r| format!("{:.3}", r[key].as_f64().unwrap_or(f64::NAN)))
                .collect();
            println!("| {key} | {} |", values.join(", "));
        }
    }
}
