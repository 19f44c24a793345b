//! Batch submit throughput over HTTP: tasks/s enqueued through `POST /v1/tasks/batch`
//! (1,000 items per request) by a few concurrent clients against one `tasklane serve`
//! on a fresh database of the bench's own PostgreSQL. The tasks are of the `remote`
//! type, which no in-process worker runs, so this measures the enqueue alone.
//!
//! `cargo bench --bench batch_submit` (env: `BENCH_RUNS`, `BENCH_DATABASE_URL`,
//! `BENCH_CLIENTS` (default 4), `BENCH_BATCHES` per client (default 10), `BENCH_ITEMS`
//! per batch (default 1000), `BENCH_BASELINE_BIN`: another `tasklane` binary, e.g. of
//! the commit before a change, measured in each round right before this one, on a fresh
//! database of the same server, for a before/after under the same machine load).

mod common;

use std::time::{Duration, Instant};

use tasklane::load::fleet::Fleet;
use tasklane::load::stats::Repeated;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What one run measured: tasks/s, and the batches' latencies sorted.
struct Run {
    tasks_per_second: f64,
    latencies: Vec<Duration>,
}

async fn run(
    bench: &common::Bench,
    bin: &std::path::Path,
    clients: usize,
    batches: usize,
    items: usize,
) -> anyhow::Result<Run> {
    let (name, url) = bench.fresh_db_for(bin).await?;
    let mut spec = bench.fleet(&url, 1, &common::serve_args());
    spec.bin = bin.to_path_buf();
    spec.http_base_port = Some(
        std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port(),
    );
    let fleet = Fleet::start(&spec, &common::connect(&url).await?).await?;
    let base = spec.http_urls()[0].clone();
    let token = tasklane::service::tokens::create(
        &url,
        &tasklane::service::tokens::TokenSpec {
            app: "bench".into(),
            scope_id: None,
            permissions: vec!["submit".into()],
            name: None,
        },
    )
    .await?
    .secret;
    let http = reqwest::Client::new();
    let started = Instant::now();
    let mut workers = Vec::new();
    for c in 0..clients {
        let (http, token, base) = (http.clone(), token.clone(), base.clone());
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(batches);
            for b in 0..batches {
                let tasks: Vec<_> = (0..items)
                    .map(|n| {
                        serde_json::json!({"task_type": "remote",
                        "scope_id": format!("s{c}-{}", n % 100),
                        "effect_key": format!("k{c}-{b}-{n}"), "input": {"n": n}})
                    })
                    .collect();
                let t = Instant::now();
                let response = http
                    .post(format!("{base}/v1/tasks/batch"))
                    .bearer_auth(&token)
                    .json(&serde_json::json!({ "tasks": tasks }))
                    .send()
                    .await?;
                anyhow::ensure!(
                    response.status() == 200,
                    "batch answered {}",
                    response.status()
                );
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
    fleet.stop();
    bench.drop_db(&name).await?;
    latencies.sort();
    Ok(Run {
        tasks_per_second: (latencies.len() * items) as f64 / elapsed.as_secs_f64(),
        latencies,
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let clients = env_or("BENCH_CLIENTS", 4).max(1);
    let batches = env_or("BENCH_BATCHES", 10).max(1);
    let items = env_or("BENCH_ITEMS", 1000).clamp(1, 1000);
    let bench = common::Bench::start().await?;
    println!("machine: {}", common::machine());
    println!("postgres: {}", bench.settings().await?);
    let mut binaries = Vec::new();
    if let Ok(baseline) = std::env::var("BENCH_BASELINE_BIN") {
        binaries.push(("baseline", std::path::PathBuf::from(baseline)));
    }
    binaries.push(("this build", bench.bin.clone()));
    let mut rates = vec![Vec::new(); binaries.len()];
    for n in 1..=common::runs() {
        for (b, (label, bin)) in binaries.iter().enumerate() {
            let r = run(&bench, bin, clients, batches, items).await?;
            let at = |q: f64| {
                r.latencies[((r.latencies.len() as f64 * q) as usize).min(r.latencies.len() - 1)]
            };
            println!(
                "run {n} ({label}): {clients} clients x {batches} batches of {items}: \
                 {:.0} tasks/s, batch p50 {:.0} ms, p99 {:.0} ms; {}",
                r.tasks_per_second,
                at(0.50).as_secs_f64() * 1e3,
                at(0.99).as_secs_f64() * 1e3,
                common::machine(),
            );
            rates[b].push(r.tasks_per_second);
        }
    }
    for ((label, _), rates) in binaries.iter().zip(rates) {
        let rates = Repeated::of(rates, true);
        println!(
            "batch submit ({label}): best {:.0} tasks/s (spread {:.0}%)",
            rates.best,
            rates.spread() * 100.0
        );
    }
    bench.stop().await;
    Ok(())
}
