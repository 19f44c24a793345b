//! Batch submit throughput over HTTP: tasks/s enqueued through `POST /v1/tasks/batch`
//! (1,000 items per request) against a local `tasklane serve --roles api` on a fresh
//! database (no worker drains the queue: this measures the enqueue alone), from a few
//! concurrent clients. Not a test: `cargo bench --bench batch_submit`. Settings:
//! `DATABASE_URL` (the server to create the database on), `BENCH_BATCHES` per client
//! (default 10), `BENCH_CLIENTS` (default 4), `BENCH_ITEMS` per batch (default 1000).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let server = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    let batches = env_or("BENCH_BATCHES", 10);
    let clients = env_or("BENCH_CLIENTS", 4).max(1);
    let items = env_or("BENCH_ITEMS", 1000).clamp(1, 1000);
    let name = format!("tasklane_bench_{}", std::process::id());
    let database = format!(
        "{}/{name}",
        server
            .rsplit_once('/')
            .map(|(base, _)| base)
            .unwrap_or(&server)
    );
    let (admin, connection) = tokio_postgres::connect(&server, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    admin
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await?;
    let result = run(&database, batches, clients, items).await;
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .await?;
    result
}

async fn run(database: &str, batches: usize, clients: usize, items: usize) -> anyhow::Result<()> {
    let types = std::env::temp_dir().join(format!("tasklane-bench-{}.toml", std::process::id()));
    std::fs::write(&types, tasklane::task::task_type::DEMO_TASK_TYPES)?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let base = format!("http://127.0.0.1:{port}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tasklane"))
        .args(["serve", "--roles", "api"])
        .env("DATABASE_URL", database)
        .env("TASKLANE_LISTEN", format!("127.0.0.1:{port}"))
        .env("TASKLANE_TASK_TYPES", &types)
        .env("TASKLANE_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()?;
    let outcome = measure(database, &base, batches, clients, items).await;
    let _ = child.kill();
    let _ = child.wait();
    outcome
}

async fn measure(
    database: &str,
    base: &str,
    batches: usize,
    clients: usize,
    items: usize,
) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    let started = Instant::now();
    while http
        .get(format!("{base}/readyz"))
        .send()
        .await
        .map(|r| r.status() != 200)
        .unwrap_or(true)
    {
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(60),
            "server not ready"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let spec = tasklane::service::tokens::TokenSpec {
        app: "bench".into(),
        scope_id: None,
        permissions: vec!["submit".into()],
        name: None,
    };
    let token = tasklane::service::tokens::create(database, &spec)
        .await?
        .secret;
    let started = Instant::now();
    let mut workers = Vec::new();
    for c in 0..clients {
        let (http, token, base) = (http.clone(), token.clone(), base.to_owned());
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(batches);
            for b in 0..batches {
                let tasks: Vec<_> = (0..items)
                    .map(|n| serde_json::json!({"task_type": "remote", "scope_id": format!("s{c}-{}", n % 100),
                        "effect_key": format!("k{c}-{b}-{n}"), "input": {"n": n}}))
                    .collect();
                let t = Instant::now();
                let response = http
                    .post(format!("{base}/v1/tasks/batch"))
                    .bearer_auth(&token)
                    .json(&serde_json::json!({ "tasks": tasks }))
                    .send()
                    .await?;
                anyhow::ensure!(response.status() == 200, "batch answered {}", response.status());
                let answer: serde_json::Value = response.json().await?;
                let created = answer["items"]
                    .as_array()
                    .map(|a| a.iter().filter(|i| i["status"] == 202).count())
                    .unwrap_or(0);
                anyhow::ensure!(created == items, "{created} of {items} items created");
                latencies.push(t.elapsed());
            }
            anyhow::Ok(latencies)
        }));
    }
    let mut latencies = Vec::new();
    for worker in workers {
        latencies.extend(worker.await??);
    }
    let elapsed = started.elapsed();
    latencies.sort();
    let tasks = latencies.len() * items;
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    println!(
        "batch submit: {tasks} tasks in {} batches of {items}, {clients} clients, {:.0} tasks/s, \
         batch p50 {:.0} ms, p99 {:.0} ms",
        latencies.len(),
        tasks as f64 / elapsed.as_secs_f64(),
        at(0.50).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
    );
    Ok(())
}
