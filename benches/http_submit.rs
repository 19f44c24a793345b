//! Submit latency over HTTP: p50/p99 of `POST /v1/tasks` (noop tasks) against a local
//! `tasklane serve` on a fresh database, from a few concurrent clients. Not a test:
//! `cargo bench --bench http_submit`. Settings: `DATABASE_URL` (the server to create the
//! database on), `BENCH_REQUESTS` (default 2000), `BENCH_CLIENTS` (default 8).

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
    let requests = env_or("BENCH_REQUESTS", 2000);
    let clients = env_or("BENCH_CLIENTS", 8).max(1);
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
    let result = run(&database, requests, clients).await;
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .await?;
    result
}

async fn run(database: &str, requests: usize, clients: usize) -> anyhow::Result<()> {
    let types = std::env::temp_dir().join(format!("tasklane-bench-{}.toml", std::process::id()));
    std::fs::write(&types, tasklane::task::types_file::DEMO_TASK_TYPES)?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let base = format!("http://127.0.0.1:{port}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tasklane"))
        .arg("serve")
        .env("DATABASE_URL", database)
        .env("TASKLANE_LISTEN", format!("127.0.0.1:{port}"))
        .env("TASKLANE_TASK_TYPES", &types)
        .env("TASKLANE_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()?;
    let outcome = measure(database, &base, requests, clients).await;
    let _ = child.kill();
    let _ = child.wait();
    outcome
}

async fn measure(
    database: &str,
    base: &str,
    requests: usize,
    clients: usize,
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
        let share = requests / clients + usize::from(c < requests % clients);
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(share);
            for n in 0..share {
                let body = serde_json::json!({"task_type": "noop", "scope_id": format!("s{c}"),
                    "effect_key": format!("k{c}-{n}"), "input": {"n": n}});
                let t = Instant::now();
                let response = http
                    .post(format!("{base}/v1/tasks"))
                    .bearer_auth(&token)
                    .json(&body)
                    .send()
                    .await?;
                anyhow::ensure!(
                    response.status().is_success(),
                    "submit answered {}",
                    response.status()
                );
                latencies.push(t.elapsed());
            }
            anyhow::Ok(latencies)
        }));
    }
    let mut latencies = Vec::with_capacity(requests);
    for worker in workers {
        latencies.extend(worker.await??);
    }
    let elapsed = started.elapsed();
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    println!(
        "http submit: {} requests, {clients} clients, {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        latencies.len(),
        latencies.len() as f64 / elapsed.as_secs_f64(),
        at(0.50).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        latencies.last().unwrap().as_secs_f64() * 1e3,
    );
    Ok(())
}
