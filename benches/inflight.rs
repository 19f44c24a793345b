//! Many long model calls in flight on one replica: 2,000 `openai` tasks against the
//! library's mock (`tasklane::mockllm`, in this process) answering after 5 s. What it
//! costs to hold them: the replica's RSS, database transactions per second and
//! PostgreSQL CPU while every call is in flight (leases renewed by heartbeats), and
//! tasklane's overhead per call: end-to-end (created → finished, database clock) minus
//! the mock's latency, p50 and p99 (and the part of it spent before the claim: the
//! pickup of 2,000 queued tasks in batches of 100).
//!
//! `cargo bench --bench inflight` (env: `BENCH_RUNS`, `BENCH_TASKS` (2000),
//! `BENCH_LATENCY_MS` (5000), `BENCH_LEASE_SECONDS` (6: a heartbeat tick every 2 s, so
//! every call is held over heartbeats), `BENCH_SERVE_ARGS`, `BENCH_DATABASE_URL`).

mod common;

use std::time::{Duration, Instant};

use anyhow::Context as _;
use tasklane::load::fleet::Fleet;
use tasklane::load::stats::Summary;
use tasklane::mockllm::{MockLlm, Reply};

const APP: &str = "inflight";
const MODEL: &str = "bench-model";

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let bench = common::Bench::start().await?;
    let tasks: i64 = env_or("BENCH_TASKS", 2000);
    let latency = Duration::from_millis(env_or("BENCH_LATENCY_MS", 5000));
    let lease: i32 = env_or("BENCH_LEASE_SECONDS", 6);
    let serve_args: Vec<String> = match std::env::var("BENCH_SERVE_ARGS") {
        Ok(args) => args.split_whitespace().map(str::to_owned).collect(),
        // One loop holding every call at once; batches of 100 per claim.
        Err(_) => format!("--concurrency {} --claim-batch 100", tasks.max(1))
            .split_whitespace()
            .map(str::to_owned)
            .collect(),
    };
    let mock = MockLlm::start().await?;
    mock.set_default(MODEL, Reply::ok().after(latency));
    let types = std::env::temp_dir().join(format!("tasklane-inflight-{}.toml", std::process::id()));
    std::fs::write(
        &types,
        format!(
            "[[task_type]]\nname = \"chat\"\nexecutor = \"openai\"\nattempt_timeout_seconds = 120\n\
             [[task_type.routes]]\nname = \"bench\"\nroute = \"local\"\nprovider = \"mock\"\n\
             model = \"{MODEL}\"\nbase_url = \"{}\"\n",
            mock.base_url()
        ),
    )?;
    println!("machine: {}", common::machine());
    println!("database: {}", bench.settings().await?);
    println!(
        "replica flags: {serve_args:?}; {tasks} tasks, mock latency {latency:?}, lease {lease} s"
    );
    let mut rows = Vec::new();
    for run in 1..=common::runs() {
        let (name, url) = bench.fresh_db().await?;
        let mut client = common::connect(&url).await?;
        let mut spec = bench.fleet(&url, 1, &serve_args);
        spec.task_types = types.clone();
        let fleet = Fleet::start(&spec, &client).await?;
        let row = measure(&mut client, &fleet, &mock, tasks, latency, lease).await?;
        println!("run {run}: {row}");
        rows.push(row);
        fleet.stop();
        bench.drop_db(&name).await?;
    }
    println!();
    println!(
        "| {tasks} calls in flight, one replica (busy machine unless stated) | value per run |"
    );
    println!("|---|---|");
    for key in [
        "peak_rss_mib",
        "in_flight_seconds",
        "xact_per_second_in_flight",
        "postgres_cores_in_flight",
        "postgres_cpu_us_per_task_second",
        "overhead_p50_ms",
        "overhead_p99_ms",
        "pickup_p50_ms",
        "pickup_p99_ms",
        "failed",
    ] {
        let values: Vec<String> = rows.iter().map(|r| format!("{}", r[key])).collect();
        println!("| {key} | {} |", values.join(", "));
    }
    common::write_json(
        "inflight",
        &serde_json::json!({"machine": common::machine(), "serve_args": serve_args,
                            "tasks": tasks, "latency_ms": latency.as_millis() as u64,
                            "lease_seconds": lease, "runs": rows}),
    )?;
    let _ = std::fs::remove_file(&types);
    bench.stop().await;
    Ok(())
}

/// One run: queue the tasks, wait until every call is in flight, measure until the
/// first answer, wait for all to finish, compute the overheads.
async fn measure(
    client: &mut tokio_postgres::Client,
    fleet: &Fleet,
    mock: &MockLlm,
    tasks: i64,
    latency: Duration,
    lease: i32,
) -> anyhow::Result<serde_json::Value> {
    let calls_before = mock.calls(MODEL);
    let answered_before = mock.answered();
    let input =
        serde_json::json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 16});
    let tx = client.transaction().await?;
    tasklane::load::drain::enqueue(&tx, APP, "chat", tasks, &input).await?;
    // Bench setup only: the bulk enqueue snapshots a 30 s lease; a shorter one makes the
    // calls span heartbeats, which is what holding them costs.
    tx.execute(
        "UPDATE tasklane.tasks SET lease_seconds = $1 WHERE app = $2",
        &[&lease, &APP],
    )
    .await?;
    tasklane::store::load::analyze_tasks(&tx).await?;
    tasklane::store::notify::wake_replicas(&tx).await?;
    tx.commit().await?;
    let started = Instant::now();
    let deadline = started + Duration::from_secs(600);
    while mock.calls(MODEL) - calls_before < tasks as u64 {
        anyhow::ensure!(Instant::now() < deadline, "calls never all in flight");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Every call is in flight: measure until the first answer is due (no call started
    // before `started`, so none answers before `started + latency`).
    let window_start = Instant::now();
    let (xact0, cpu0) = (xacts(client).await?, backend_cpu(client).await?);
    let window_end = started + latency;
    if let Some(left) = window_end.checked_duration_since(Instant::now()) {
        tokio::time::sleep(left.saturating_sub(Duration::from_millis(100))).await;
    }
    let in_flight_answered = mock.answered() - answered_before;
    let (xact1, cpu1) = (xacts(client).await?, backend_cpu(client).await?);
    let window = window_start.elapsed().as_secs_f64();
    let peak_rss = fleet.memory()[0].peak_rss_mib;
    while tasklane::load::drain::pending(client, APP).await? {
        anyhow::ensure!(
            Instant::now() < deadline,
            "tasks did not finish within 600 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let rows = client
        .query(
            "SELECT extract(epoch FROM finished_at - created_at)::float8, state, \
                    extract(epoch FROM (SELECT min(e.at) FROM tasklane.task_events e \
                                        WHERE e.task_id = t.id AND e.type = 'task.running') - created_at)::float8 \
             FROM tasklane.tasks t WHERE app = $1",
            &[&APP],
        )
        .await
        .context("end-to-end times")?;
    let failed = rows
        .iter()
        .filter(|r| r.get::<_, String>(1) != "succeeded")
        .count();
    let overheads: Vec<Duration> = rows
        .iter()
        .map(|r| Duration::from_secs_f64((r.get::<_, f64>(0) - latency.as_secs_f64()).max(0.0)))
        .collect();
    let overhead = Summary::of(&overheads);
    let pickups: Vec<Duration> = rows
        .iter()
        .filter_map(|r| r.get::<_, Option<f64>>(2))
        .map(|s| Duration::from_secs_f64(s.max(0.0)))
        .collect();
    let pickup = Summary::of(&pickups);
    let cores = (cpu1 - cpu0) / window.max(1e-6);
    Ok(serde_json::json!({
        "peak_rss_mib": (peak_rss * 10.0).round() / 10.0,
        "in_flight_seconds": (window * 100.0).round() / 100.0,
        "answered_in_window": in_flight_answered,
        "xact_per_second_in_flight": (((xact1 - xact0) as f64 / window.max(1e-6)) * 10.0).round() / 10.0,
        "postgres_cores_in_flight": (cores * 1000.0).round() / 1000.0,
        "postgres_cpu_us_per_task_second": ((cores * 1e6 / tasks as f64) * 100.0).round() / 100.0,
        "overhead_p50_ms": (overhead.p50_ms * 10.0).round() / 10.0,
        "overhead_p99_ms": (overhead.p99_ms * 10.0).round() / 10.0,
        "pickup_p50_ms": (pickup.p50_ms * 10.0).round() / 10.0,
        "pickup_p99_ms": (pickup.p99_ms * 10.0).round() / 10.0,
        "failed": failed,
    }))
}

/// Committed and rolled back transactions of this database so far (each statement of
/// the replica runs in its own, or a few in one).
async fn xacts(client: &tokio_postgres::Client) -> anyhow::Result<i64> {
    let row = client
        .query_one(
            "SELECT (xact_commit + xact_rollback)::int8 FROM pg_stat_database WHERE datname = current_database()",
            &[],
        )
        .await?;
    // Statistics are flushed about once a second; a snapshot read is cleared first.
    client
        .batch_execute("SELECT pg_stat_clear_snapshot()")
        .await?;
    Ok(row.get(0))
}

/// CPU seconds of the other backends of this database (the replica's connections).
async fn backend_cpu(client: &tokio_postgres::Client) -> anyhow::Result<f64> {
    Ok(tasklane::store::load::backend_pids(client)
        .await?
        .into_iter()
        .filter_map(|pid| tasklane::load::fleet::cpu_seconds(pid as u32))
        .sum())
}
