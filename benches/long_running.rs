//! Long-running work: 10,000 `sleep` tasks of 60 s in flight at once across 2 replicas
//! (each replica runs up to 5,000 attempts). What it costs while they run: PostgreSQL
//! CPU (cores, the fleet's backends), transactions per second (nearly every heartbeat is
//! one), and each replica's RSS; then that every task succeeded on its first and only
//! claim (no lease was lost).
//!
//! The steady-state window starts once every task runs and lasts `BENCH_WINDOW_SECONDS`
//! (default 30). `cargo bench --bench long_running` (env: `BENCH_TASKS`,
//! `BENCH_SLEEP_MS`, `BENCH_WINDOW_SECONDS`, `BENCH_DATABASE_URL`; benches/RESULTS.md).

mod common;

use std::time::{Duration, Instant};

use tasklane::load::cpu::Backends;
use tasklane::load::drain;
use tasklane::load::fleet::Fleet;

const REPLICAS: usize = 2;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let tasks: i64 = env_or("BENCH_TASKS", 10_000);
    let sleep_ms: u64 = env_or("BENCH_SLEEP_MS", 60_000);
    let window = Duration::from_secs(env_or("BENCH_WINDOW_SECONDS", 30));
    let bench = common::Bench::start().await?;
    println!("machine: {}", common::machine());
    println!("postgres: {}", bench.settings().await?);
    let per_replica = (tasks as usize).div_ceil(REPLICAS);
    let serve_args: Vec<String> = [
        "--concurrency",
        &per_replica.to_string(),
        "--claim-batch",
        "100",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    println!("replica flags: {serve_args:?}");

    let (name, url) = bench.fresh_db().await?;
    let mut client = common::connect(&url).await?;
    let fleet = Fleet::start(&bench.fleet(&url, REPLICAS, &serve_args), &client).await?;
    let app = "long";
    let tx = client.transaction().await?;
    let input = serde_json::json!({"ms": sleep_ms});
    drain::enqueue(&tx, app, "sleep", tasks, &input).await?;
    tasklane::store::notify::wake_replicas(&tx).await?;
    tx.commit().await?;
    let started = Instant::now();
    let running = "SELECT count(*) FROM tasklane.tasks WHERE state = 'running'";
    loop {
        let n: i64 = client.query_one(running, &[]).await?.get(0);
        if n == tasks {
            break;
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_millis(sleep_ms),
            "only {n} of {tasks} tasks were running before the first would finish"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let ramp = started.elapsed();
    println!("all {tasks} running after {:.1} s", ramp.as_secs_f64());
    anyhow::ensure!(
        ramp + window < Duration::from_millis(sleep_ms),
        "the window would outlast the tasks: lower BENCH_WINDOW_SECONDS or raise BENCH_SLEEP_MS"
    );

    let cpu_before = Backends::read(&client).await?;
    let xacts_before = tasklane::load::store::transactions(&client).await?;
    let replica_cpu_before = fleet.total_cpu_seconds();
    tokio::time::sleep(window).await;
    let cpu = cpu_before.used_until(&Backends::read(&client).await?);
    let xacts = tasklane::load::store::transactions(&client).await? - xacts_before;
    let replica_cpu = fleet.total_cpu_seconds() - replica_cpu_before;
    let memory = fleet.memory();
    let seconds = window.as_secs_f64();

    while drain::pending(&client, app).await? {
        anyhow::ensure!(
            started.elapsed() < Duration::from_millis(sleep_ms) + Duration::from_secs(300),
            "tasks were still unfinished 300 s after they were due"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let broken = tasklane::load::store::reclaimed(&client, app).await?;
    fleet.stop();
    bench.drop_db(&name).await?;

    println!();
    println!(
        "| figure ({tasks} tasks of {} s in flight, {REPLICAS} replicas, {:.0} s window) | value |",
        sleep_ms / 1000,
        seconds
    );
    println!("|---|---|");
    println!(
        "| PostgreSQL CPU (fleet's backends) | {:.3} cores |",
        cpu / seconds
    );
    println!(
        "| replicas' CPU, together | {:.3} cores |",
        replica_cpu / seconds
    );
    println!("| transactions/s | {:.0} |", xacts as f64 / seconds);
    for (n, m) in memory.iter().enumerate() {
        println!(
            "| replica {} RSS (peak) | {:.0} MiB ({:.0} MiB) |",
            n + 1,
            m.rss_mib,
            m.peak_rss_mib
        );
    }
    println!("| tasks that did not succeed on their first and only claim (a lost lease shows here) | {broken} of {tasks} |");
    anyhow::ensure!(broken == 0, "{broken} tasks lost a lease or ran twice");
    common::write_json(
        "long_running",
        &serde_json::json!({
            "machine": common::machine(),
            "postgres": bench.settings().await?,
            "tasks": tasks,
            "sleep_ms": sleep_ms,
            "replicas": REPLICAS,
            "window_seconds": seconds,
            "postgres_cores": cpu / seconds,
            "replica_cores": replica_cpu / seconds,
            "transactions_per_second": xacts as f64 / seconds,
            "memory": memory,
            "broken": broken,
        }),
    )?;
    bench.stop().await;
    Ok(())
}
