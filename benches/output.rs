//! Live output across replicas: `BENCH_TASKS` (200) `openai` tasks stream at once from
//! the library's mock (in this process), each answer `BENCH_CHUNKS` (200) chunks
//! `BENCH_CHUNK_MS` (20) apart, on one worker replica (`--roles worker,maintenance`),
//! while one observer per task follows `GET /v1/tasks/{id}/output` on another replica
//! (`--roles api`). Every chunk's content is the time the mock wrote it
//! (`Reply::stamped`), so each observer times every chunk from the mock's write to its
//! arrival on the other replica: p50/p99 over all chunks. Alongside, what PostgreSQL
//! paid for the streams: commits (the replicas' own, the bench's reads excluded
//! approximately by counting its statements) and row writes to `tasklane.task_output`,
//! per streamed attempt.
//!
//! `cargo bench --bench output` (env: `BENCH_RUNS`, `BENCH_TASKS`, `BENCH_CHUNKS`,
//! `BENCH_CHUNK_MS`, `BENCH_DATABASE_URL`).

mod common;

use std::time::Duration;

use tasklane::load::fleet::Fleet;
use tasklane::mockllm::{MockLlm, Reply};

const APP: &str = "output";
const MODEL: &str = "stream-model";

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let bench = common::Bench::start().await?;
    let tasks: i64 = env_or("BENCH_TASKS", 200);
    let chunks: usize = env_or("BENCH_CHUNKS", 200);
    let every = Duration::from_millis(env_or("BENCH_CHUNK_MS", 20));
    let mock = MockLlm::start().await?;
    mock.set_default(MODEL, Reply::stamped(chunks, every));
    let types = std::env::temp_dir().join(format!("tasklane-output-{}.toml", std::process::id()));
    std::fs::write(
        &types,
        format!(
            "[[task_type]]\nname = \"chat\"\nexecutor = \"openai\"\nattempt_timeout_seconds = 300\n\
             [[task_type.routes]]\nname = \"bench\"\nroute = \"local\"\nprovider = \"mock\"\n\
             model = \"{MODEL}\"\nbase_url = \"{}\"\n",
            mock.base_url()
        ),
    )?;
    println!("machine: {}", common::machine());
    println!("database: {}", bench.settings().await?);
    println!("{tasks} streaming tasks, {chunks} chunks {every:?} apart");
    let mut rows = Vec::new();
    for run in 1..=common::runs() {
        let (name, url) = bench.fresh_db().await?;
        let client = common::connect(&url).await?;
        let concurrency = format!("{}", tasks.max(1) + 16);
        let mut workers = bench.fleet(
            &url,
            1,
            &[
                "--roles".into(),
                "worker,maintenance".into(),
                "--concurrency".into(),
                concurrency,
            ],
        );
        workers.task_types = types.clone();
        let mut observers = bench.fleet(&url, 1, &["--roles".into(), "api".into()]);
        observers.task_types = types.clone();
        observers.http_base_port = Some(
            std::net::TcpListener::bind("127.0.0.1:0")?
                .local_addr()?
                .port(),
        );
        let observer_fleet = Fleet::start(&observers, &client).await?;
        let worker_fleet = Fleet::start(&workers, &client).await?;
        let base = observers.http_urls()[0].clone();
        let token = common::create_token(&workers.bin, &url, APP, "submit,read")?;
        let figures = streams(&client, &base, &token, tasks, chunks).await?;
        worker_fleet.stop();
        observer_fleet.stop();
        bench.drop_db(&name).await?;
        println!("run {run}: {figures}");
        rows.push(figures);
    }
    println!();
    println!("| {tasks} streams of {chunks} chunks, worker and observer on two replicas | value per run |");
    println!("|---|---|");
    for key in [
        "latency_p50_ms",
        "latency_p99_ms",
        "chunks_seen",
        "commits_per_attempt",
        "task_output_writes_per_attempt",
        "seconds",
    ] {
        let values: Vec<String> = rows.iter().map(|r| format!("{}", r[key])).collect();
        println!("| {key} | {} |", values.join(", "));
    }
    common::write_json(
        "output",
        &serde_json::json!({"machine": common::machine(), "tasks": tasks, "chunks": chunks,
                            "chunk_ms": every.as_millis() as u64, "runs": rows}),
    )?;
    let _ = std::fs::remove_file(&types);
    bench.stop().await;
    Ok(())
}

/// Submits `tasks` tasks over HTTP, follows each one's output to its end, and reports
/// the chunk latencies and what PostgreSQL paid.
async fn streams(
    client: &tokio_postgres::Client,
    base: &str,
    token: &str,
    tasks: i64,
    chunks: usize,
) -> anyhow::Result<serde_json::Value> {
    let http = reqwest::Client::new();
    let before = counters(client).await?;
    let started = std::time::Instant::now();
    let mut followers = Vec::new();
    for i in 0..tasks {
        let body = serde_json::json!({
            "task_type": "chat", "scope_id": "bench", "effect_key": format!("t{i}"),
            "input": {"messages": [{"role": "user", "content": "hi"}]},
        });
        let answer: serde_json::Value = http
            .post(format!("{base}/v1/tasks"))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let id = answer["id"].as_str().unwrap_or_default().to_owned();
        let (http, base, token) = (http.clone(), base.to_owned(), token.to_owned());
        followers.push(tokio::spawn(async move {
            follow(&http, &base, &token, &id).await
        }));
    }
    let mut latencies = Vec::new();
    for follower in followers {
        latencies.extend(follower.await??);
    }
    let seconds = started.elapsed().as_secs_f64();
    let after = counters(client).await?;
    latencies.sort_unstable();
    let pct = |p: f64| {
        latencies
            .get(((latencies.len() as f64 - 1.0) * p).round() as usize)
            .map(|us| *us as f64 / 1000.0)
            .unwrap_or(f64::NAN)
    };
    Ok(serde_json::json!({
        "latency_p50_ms": pct(0.50),
        "latency_p99_ms": pct(0.99),
        "chunks_seen": latencies.len(),
        "chunks_expected": tasks as usize * chunks,
        "commits_per_attempt": (after.0 - before.0) as f64 / tasks as f64,
        "task_output_writes_per_attempt": (after.1 - before.1) as f64 / tasks as f64,
        "seconds": seconds,
    }))
}

/// Commits of the database, and rows written to `tasklane.task_output` (inserted,
/// updated, deleted). The statistics lag a little: read after the streams ended.
async fn counters(client: &tokio_postgres::Client) -> anyhow::Result<(i64, i64)> {
    client
        .execute("SELECT pg_stat_clear_snapshot()", &[])
        .await?;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let commits: i64 = client
        .query_one(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()",
            &[],
        )
        .await?
        .get(0);
    let writes: i64 = client
        .query_one(
            "SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::bigint \
             FROM pg_stat_user_tables WHERE schemaname = 'tasklane' AND relname = 'task_output'",
            &[],
        )
        .await?
        .get(0);
    Ok((commits, writes))
}

/// Follows one task's output to its end: the latency of every stamped chunk, in
/// microseconds from the mock's write to its arrival here.
async fn follow(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    id: &str,
) -> anyhow::Result<Vec<u128>> {
    let response = http
        .get(format!("{base}/v1/tasks/{id}/output"))
        .bearer_auth(token)
        .send()
        .await?
        .error_for_status()?;
    common::stamps::latencies(response).await
}
