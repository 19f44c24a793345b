//! Many long model calls in flight on one replica: `openai` tasks against the
//! library's mock (`tasklane::mockllm`, in this process) answering after 5 s, 2,000 of
//! them in flight at once. Two phases per run, each on a fresh database and replica:
//!
//! - **steady arrival** (the headline for "overhead per call"): tasks are submitted at
//!   a constant rate, tasks / latency (400/s), in small bulk chunks every 10 ms for
//!   `BENCH_STEADY_SECONDS` (10), so from the 5th second on 2,000 calls are in flight
//!   and as many start as finish. Overhead = end-to-end (created → finished, database
//!   clock) − the mock's latency: what tasklane adds to a call when work arrives as a
//!   service sees it (pickup, the call's start, the settle), p50/p99 over every task.
//!   Statements/s and PostgreSQL CPU are measured while 2,000 are in flight, claims and
//!   settles of the steady flow included (the bench's own submits subtracted).
//! - **burst**: all 2,000 queued in one transaction, as a backlog after an outage would
//!   be. Its overhead is mostly the queueing of the burst (claims of 100 in a row), so
//!   it is reported beside the steady figure with its pickup (created → claimed);
//!   statements/s and PostgreSQL CPU are measured once every call is in flight, until
//!   the first answer (leases renewed by heartbeats, nothing else).
//!
//! Both report the replica's peak RSS.
//!
//! `cargo bench --bench inflight` (env: `BENCH_RUNS`, `BENCH_TASKS` (2000),
//! `BENCH_LATENCY_MS` (5000), `BENCH_STEADY_SECONDS` (10), `BENCH_LEASE_SECONDS` (6: a
//! heartbeat tick every 2 s, so every call is held over heartbeats), `BENCH_SERVE_ARGS`,
//! `BENCH_DATABASE_URL`).

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
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

/// What every phase of a run shares.
struct Setup {
    tasks: i64,
    latency: Duration,
    lease: i32,
    steady_seconds: f64,
    serve_args: Vec<String>,
    types: std::path::PathBuf,
    mock: MockLlm,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let bench = common::Bench::start().await?;
    let tasks: i64 = env_or("BENCH_TASKS", 2000);
    let serve_args: Vec<String> = match std::env::var("BENCH_SERVE_ARGS") {
        Ok(args) => args.split_whitespace().map(str::to_owned).collect(),
        // One loop holding every call at once; batches of 100 per claim.
        Err(_) => format!("--concurrency {} --claim-batch 100", tasks.max(1))
            .split_whitespace()
            .map(str::to_owned)
            .collect(),
    };
    let latency = Duration::from_millis(env_or("BENCH_LATENCY_MS", 5000));
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
    let setup = Setup {
        tasks,
        latency,
        lease: env_or("BENCH_LEASE_SECONDS", 6),
        steady_seconds: env_or("BENCH_STEADY_SECONDS", 10.0),
        serve_args,
        types,
        mock,
    };
    println!("machine: {}", common::machine());
    println!("database: {}", bench.settings().await?);
    println!(
        "replica flags: {:?}; {tasks} tasks in flight, mock latency {latency:?}, lease {} s, \
         steady arrival for {} s",
        setup.serve_args, setup.lease, setup.steady_seconds
    );
    let mut rows = Vec::new();
    for run in 1..=common::runs() {
        let mut row = serde_json::Map::new();
        for (phase, steady) in [("steady", true), ("burst", false)] {
            let (name, url) = bench.fresh_db().await?;
            let mut client = common::connect(&url).await?;
            let mut spec = bench.fleet(&url, 1, &setup.serve_args);
            spec.task_types = setup.types.clone();
            let fleet = Fleet::start(&spec, &client).await?;
            let figures = if steady {
                steady_arrival(&mut client, &url, &fleet, &setup).await?
            } else {
                burst(&mut client, &fleet, &setup).await?
            };
            fleet.stop();
            bench.drop_db(&name).await?;
            println!("run {run} {phase}: {figures}");
            for (key, value) in figures.as_object().expect("an object") {
                row.insert(format!("{phase}_{key}"), value.clone());
            }
        }
        rows.push(serde_json::Value::Object(row));
    }
    println!();
    println!(
        "| {tasks} calls in flight, one replica (busy machine unless stated) | value per run |"
    );
    println!("|---|---|");
    for key in [
        "steady_overhead_p50_ms",
        "steady_overhead_p99_ms",
        "steady_pickup_p50_ms",
        "steady_pickup_p99_ms",
        "steady_in_flight_peak",
        "steady_peak_rss_mib",
        "steady_xact_per_second",
        "steady_postgres_cores",
        "steady_failed",
        "burst_overhead_p50_ms",
        "burst_overhead_p99_ms",
        "burst_pickup_p50_ms",
        "burst_pickup_p99_ms",
        "burst_peak_rss_mib",
        "burst_xact_per_second",
        "burst_postgres_cores",
        "burst_postgres_cpu_us_per_task_second",
        "burst_failed",
    ] {
        let values: Vec<String> = rows.iter().map(|r| format!("{}", r[key])).collect();
        println!("| {key} | {} |", values.join(", "));
    }
    common::write_json(
        "inflight",
        &serde_json::json!({"machine": common::machine(), "serve_args": setup.serve_args,
                            "tasks": tasks, "latency_ms": latency.as_millis() as u64,
                            "lease_seconds": setup.lease,
                            "steady_seconds": setup.steady_seconds, "runs": rows}),
    )?;
    let _ = std::fs::remove_file(&setup.types);
    bench.stop().await;
    Ok(())
}

fn input() -> serde_json::Value {
    serde_json::json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 16})
}

/// Queues `count` tasks in `client`'s transaction and wakes the replica at its commit.
async fn enqueue(
    tx: &tokio_postgres::Transaction<'_>,
    count: i64,
    lease: i32,
) -> anyhow::Result<()> {
    tasklane::load::drain::enqueue(tx, APP, "chat", count, &input()).await?;
    // Bench setup only: the bulk enqueue snapshots a 30 s lease; a shorter one makes the
    // calls span heartbeats, which is what holding them costs. Only the rows queued here
    // (earlier ones carry it already, and claimed ones are not touched).
    tx.execute(
        "UPDATE tasklane.tasks SET lease_seconds = $1 \
         WHERE app = $2 AND state = 'queued' AND lease_seconds <> $1",
        &[&lease, &APP],
    )
    .await?;
    tasklane::store::notify::wake_replicas(tx).await?;
    Ok(())
}

/// Steady arrival: submits tasks / latency per second in chunks every 10 ms on a
/// connection of its own; measures while the flow holds `tasks` calls in flight.
async fn steady_arrival(
    client: &mut tokio_postgres::Client,
    url: &str,
    fleet: &Fleet,
    setup: &Setup,
) -> anyhow::Result<serde_json::Value> {
    let rate = setup.tasks as f64 / setup.latency.as_secs_f64();
    let total = (rate * setup.steady_seconds).round() as i64;
    let mut submitter = common::connect(url).await?;
    let submitter_pid: i32 = submitter
        .query_one("SELECT pg_backend_pid()", &[])
        .await?
        .get(0);
    let chunks = Arc::new(AtomicU64::new(0));
    let lease = setup.lease;
    let committed = chunks.clone();
    let submitting = tokio::spawn(async move {
        let started = Instant::now();
        let mut sent = 0_i64;
        let mut tick = tokio::time::interval(Duration::from_millis(10));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        while sent < total {
            tick.tick().await;
            let due = ((started.elapsed().as_secs_f64() * rate) as i64).min(total) - sent;
            if due <= 0 {
                continue;
            }
            let tx = submitter.transaction().await?;
            enqueue(&tx, due, lease).await?;
            tx.commit().await?;
            committed.fetch_add(1, Ordering::Relaxed);
            sent += due;
        }
        anyhow::Ok(started.elapsed())
    });
    // The flow holds `tasks` calls from the first answers on (the latency, plus a
    // second to settle) until the submits stop.
    let started = Instant::now();
    let window_start = started + setup.latency + Duration::from_secs(1);
    let window_end = started + Duration::from_secs_f64(setup.steady_seconds - 0.5);
    anyhow::ensure!(
        window_end > window_start + Duration::from_secs(1),
        "BENCH_STEADY_SECONDS must exceed the latency by 2.5 s or more"
    );
    tokio::time::sleep_until(window_start.into()).await;
    let (xact0, cpu0, chunks0) = (
        xacts(client).await?,
        backend_cpu(client, submitter_pid).await?,
        chunks.load(Ordering::Relaxed),
    );
    let measured = Instant::now();
    let mut in_flight_peak = 0;
    while Instant::now() < window_end {
        let in_flight = setup.mock.calls(MODEL) - setup.mock.answered();
        in_flight_peak = in_flight_peak.max(in_flight);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (xact1, cpu1, chunks1) = (
        xacts(client).await?,
        backend_cpu(client, submitter_pid).await?,
        chunks.load(Ordering::Relaxed),
    );
    let window = measured.elapsed().as_secs_f64();
    let submitted_in = submitting.await??;
    let peak_rss = fleet.memory()[0].peak_rss_mib;
    wait_finished(client).await?;
    let times = times(client, setup.latency).await?;
    // The submitter's transactions are the bench's, not the replica's.
    let replica_xacts = (xact1 - xact0) - (chunks1 - chunks0) as i64;
    let cores = (cpu1 - cpu0) / window.max(1e-6);
    let mut figures = serde_json::json!({
        "submitted": total,
        "submit_seconds": round(submitted_in.as_secs_f64(), 100.0),
        "in_flight_peak": in_flight_peak,
        "peak_rss_mib": round(peak_rss, 10.0),
        "window_seconds": round(window, 100.0),
        "xact_per_second": round(replica_xacts as f64 / window.max(1e-6), 10.0),
        "postgres_cores": round(cores, 1000.0),
    });
    merge(&mut figures, times);
    Ok(figures)
}

/// The burst: every task queued in one transaction; measures once every call is in
/// flight until the first answer is due.
async fn burst(
    client: &mut tokio_postgres::Client,
    fleet: &Fleet,
    setup: &Setup,
) -> anyhow::Result<serde_json::Value> {
    let (mock, tasks, latency) = (&setup.mock, setup.tasks, setup.latency);
    let calls_before = mock.calls(MODEL);
    let answered_before = mock.answered();
    let tx = client.transaction().await?;
    enqueue(&tx, tasks, setup.lease).await?;
    tasklane::load::store::analyze_tasks(&tx).await?;
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
    let (xact0, cpu0) = (xacts(client).await?, backend_cpu(client, 0).await?);
    let window_end = started + latency;
    if let Some(left) = window_end.checked_duration_since(Instant::now()) {
        tokio::time::sleep(left.saturating_sub(Duration::from_millis(100))).await;
    }
    let in_flight_answered = mock.answered() - answered_before;
    let (xact1, cpu1) = (xacts(client).await?, backend_cpu(client, 0).await?);
    let window = window_start.elapsed().as_secs_f64();
    let peak_rss = fleet.memory()[0].peak_rss_mib;
    wait_finished(client).await?;
    let times = times(client, latency).await?;
    let cores = (cpu1 - cpu0) / window.max(1e-6);
    let mut figures = serde_json::json!({
        "peak_rss_mib": round(peak_rss, 10.0),
        "window_seconds": round(window, 100.0),
        "answered_in_window": in_flight_answered,
        "xact_per_second": round((xact1 - xact0) as f64 / window.max(1e-6), 10.0),
        "postgres_cores": round(cores, 1000.0),
        "postgres_cpu_us_per_task_second": round(cores * 1e6 / tasks as f64, 100.0),
    });
    merge(&mut figures, times);
    Ok(figures)
}

async fn wait_finished(client: &tokio_postgres::Client) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(600);
    while tasklane::load::drain::pending(client, APP).await? {
        anyhow::ensure!(
            Instant::now() < deadline,
            "tasks did not finish within 600 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

/// Overhead (end-to-end − latency) and pickup (created → first `task.running`) of every
/// task, database clock, and how many did not succeed.
async fn times(
    client: &tokio_postgres::Client,
    latency: Duration,
) -> anyhow::Result<serde_json::Value> {
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
        .filter_map(|r| r.get::<_, Option<f64>>(0))
        .map(|s| Duration::from_secs_f64((s - latency.as_secs_f64()).max(0.0)))
        .collect();
    let overhead = Summary::of(&overheads);
    let pickups: Vec<Duration> = rows
        .iter()
        .filter_map(|r| r.get::<_, Option<f64>>(2))
        .map(|s| Duration::from_secs_f64(s.max(0.0)))
        .collect();
    let pickup = Summary::of(&pickups);
    Ok(serde_json::json!({
        "tasks": rows.len(),
        "overhead_p50_ms": round(overhead.p50_ms, 10.0),
        "overhead_p99_ms": round(overhead.p99_ms, 10.0),
        "overhead_max_ms": round(overhead.max_ms, 10.0),
        "pickup_p50_ms": round(pickup.p50_ms, 10.0),
        "pickup_p99_ms": round(pickup.p99_ms, 10.0),
        "failed": failed,
    }))
}

fn round(value: f64, per: f64) -> f64 {
    (value * per).round() / per
}

fn merge(into: &mut serde_json::Value, from: serde_json::Value) {
    if let (Some(into), serde_json::Value::Object(from)) = (into.as_object_mut(), from) {
        into.extend(from);
    }
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

/// CPU seconds of the other backends of this database (the replica's connections),
/// but `except` (the bench's own submitter; 0: none).
async fn backend_cpu(client: &tokio_postgres::Client, except: i32) -> anyhow::Result<f64> {
    Ok(tasklane::load::store::backend_pids(client)
        .await?
        .into_iter()
        .filter(|pid| *pid != except)
        .filter_map(|pid| tasklane::load::fleet::cpu_seconds(pid as u32))
        .sum())
}
