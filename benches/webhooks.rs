//! Webhooks: a drain of `noop` tasks by one `tasklane serve` replica, without and with
//! one endpoint subscribed to `task.succeeded` (a receiver in this process answering
//! 204), alternating in each run. Reports the drain's tasks/s both ways and their ratio
//! (the outbox's added cost per task), deliveries/s from the first notification
//! written to the last delivered, and the tasks drained and notified per second (from
//! the drain's start to the last delivery: the ratio above counts only what the
//! deliverer does within the drain, so a faster deliverer can lower it); checks that every task was notified exactly once in
//! the outbox and that the receiver heard every notification.
//!
//! `cargo bench --bench webhooks` (env: `BENCH_RUNS`, `BENCH_TASKS` default 10,000,
//! `BENCH_SERVE_ARGS`, `BENCH_DATABASE_URL`; see benches/RESULTS.md).

mod common;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tasklane::load::drain;
use tasklane::load::fleet::Fleet;
use tasklane::load::stats::Repeated;
use tasklane::store;

const APP: &str = "drain";

/// A receiver that records each webhook-id it hears and answers 204.
#[derive(Clone, Default)]
struct Receiver {
    ids: Arc<Mutex<HashSet<String>>>,
    requests: Arc<Mutex<u64>>,
}

impl Receiver {
    async fn start(&self) -> anyhow::Result<String> {
        let state = self.clone();
        let app = axum::Router::new().fallback(move |headers: axum::http::HeaderMap| {
            let state = state.clone();
            async move {
                if let Some(id) = headers.get("webhook-id").and_then(|v| v.to_str().ok()) {
                    state.ids.lock().unwrap().insert(id.to_owned());
                }
                *state.requests.lock().unwrap() += 1;
                axum::http::StatusCode::NO_CONTENT
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/hook", listener.local_addr()?);
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(url)
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let bench = common::Bench::start().await?;
    let runs = common::runs();
    let tasks: i64 = std::env::var("BENCH_TASKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let mut serve_args = common::serve_args();
    serve_args.extend(["--webhook-allow-cidrs".into(), "127.0.0.0/8".into()]);
    println!("machine: {}", common::machine());
    println!("postgres: {}", bench.settings().await?);
    println!("replica flags: {:?}", serve_args);

    let (mut without, mut with, mut deliveries) = (Vec::new(), Vec::new(), Vec::new());
    let mut notified = Vec::new();
    let mut details = Vec::new();
    for run in 1..=runs {
        for subscribed in [false, true] {
            let (name, url) = bench.fresh_db().await?;
            let mut client = common::connect(&url).await?;
            let receiver = Receiver::default();
            if subscribed {
                let hook = receiver.start().await?;
                let events = vec!["task.succeeded".to_owned()];
                let endpoint =
                    store::webhooks::upsert(&client, APP, "bench", &hook, &events).await?;
                let secret = tasklane::webhooks::signature::generate_secret();
                store::webhooks::rotate_secret(&client, endpoint.id, &secret).await?;
            }
            let fleet = Fleet::start(&bench.fleet(&url, 1, &serve_args), &client).await?;
            let drained = drain::drain(&mut client, &fleet, APP, tasks).await?;
            anyhow::ensure!(
                drained.broken == 0,
                "{} tasks not worked exactly once",
                drained.broken
            );
            let progress = if subscribed {
                Some(all_delivered(&client, &receiver, tasks).await?)
            } else {
                None
            };
            fleet.stop();
            bench.drop_db(&name).await?;
            print!(
                "run {run}: {} endpoint(s): drain {:.0} tasks/s, cpu ms/task replica {:.3} postgres {:.3}",
                u8::from(subscribed),
                drained.tasks_per_second,
                drained.replica_cpu_ms_per_task,
                drained.postgres_cpu_ms_per_task,
            );
            if let Some(progress) = progress {
                let per_second = tasks as f64 / progress.seconds.unwrap_or(f64::NAN);
                let lag = progress.lag_seconds.unwrap_or(f64::NAN);
                // The last notification is written with the last task's settle.
                let end_to_end = tasks as f64 / (drained.seconds + lag);
                println!(
                    ", {per_second:.0} deliveries/s, last delivery {lag:.2} s after the last notification, {end_to_end:.0} tasks drained and notified/s"
                );
                deliveries.push(per_second);
                notified.push(end_to_end);
                with.push(drained.tasks_per_second);
            } else {
                println!();
                without.push(drained.tasks_per_second);
            }
            details.push(serde_json::json!({"run": run, "subscribed": subscribed, "drain": drained, "webhooks": progress}));
        }
    }
    let without = Repeated::of(without, true);
    let with = Repeated::of(with, true);
    let deliveries = Repeated::of(deliveries, true);
    let notified = Repeated::of(notified, true);
    println!();
    println!("| figure | best | spread |");
    println!("|---|---|---|");
    println!(
        "| drain, no endpoint | {:.0} tasks/s | {:.0}% |",
        without.best,
        without.spread() * 100.0
    );
    println!(
        "| drain, one endpoint | {:.0} tasks/s | {:.0}% |",
        with.best,
        with.spread() * 100.0
    );
    println!(
        "| ratio (target ≥ 0.80) | {:.2} | |",
        with.best / without.best
    );
    println!(
        "| deliveries, first written to last delivered | {:.0} /s | {:.0}% |",
        deliveries.best,
        deliveries.spread() * 100.0
    );
    println!(
        "| drained and notified, start to last delivery | {:.0} tasks/s | {:.0}% |",
        notified.best,
        notified.spread() * 100.0
    );
    println!(
        "| its ratio to the drain without | {:.2} | |",
        notified.best / without.best
    );
    common::write_json(
        "webhooks",
        &serde_json::json!({
            "machine": common::machine(),
            "postgres": bench.settings().await?,
            "tasks": tasks,
            "serve_args": serve_args,
            "drain_without": without,
            "drain_with": with,
            "deliveries_per_second": deliveries,
            "drained_and_notified_per_second": notified,
            "runs": details,
        }),
    )?;
    bench.stop().await;
    Ok(())
}

/// Waits until every task's notification is delivered (bounded), then checks there is
/// exactly one per task and the receiver heard each.
async fn all_delivered(
    client: &tokio_postgres::Client,
    receiver: &Receiver,
    tasks: i64,
) -> anyhow::Result<tasklane::load::store::WebhookProgress> {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let progress = tasklane::load::store::webhook_progress(client, APP).await?;
        anyhow::ensure!(
            progress.total == tasks,
            "{} notifications for {tasks} tasks",
            progress.total
        );
        if progress.delivered == tasks {
            let heard = receiver.ids.lock().unwrap().len() as i64;
            anyhow::ensure!(heard == tasks, "the receiver heard {heard} of {tasks}");
            return Ok(progress);
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "not delivered within 600 s: {progress:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
