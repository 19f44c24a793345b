//! How fast a replica finds that its connections to PostgreSQL are black-holed, with
//! the default connection settings, and how fast it works again once the path heals.
//! One real `tasklane serve` reaches its database through a proxy
//! (`tasklane::devdb::BlackHoleProxy`) that cuts every connection without a close, and
//! takes new ones without forwarding them, for [`CUT_FOR`]; then forwards new ones again.
//! Measured from the cut: the first `/readyz` 503, a pooled statement's failure (a
//! pool made as the replica makes its own, the statement sent just after the cut),
//! and the replica's first new connection; from the heal: `/readyz` 200 again and a
//! task submitted then finished.
//!
//! `cargo bench --bench black_hole` (env: `BENCH_RUNS`, `BENCH_DATABASE_URL`).

mod common;

use std::time::{Duration, Instant};

use tasklane::devdb::BlackHoleProxy;
use tasklane::load::fleet::Fleet;
use tasklane::load::stats::Repeated;
use tasklane::store::connect::Database;

/// How long the path stays cut: longer than every bound being measured.
const CUT_FOR: Duration = Duration::from_secs(25);
/// The replicas' default (`--statement-timeout-ms`).
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(50);

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let bench = common::Bench::start().await?;
    println!("machine: {}", common::machine());
    println!("{}", bench.settings().await?);
    let names = [
        "/readyz 503 after the cut",
        "a pooled statement fails after the cut",
        "first new connection after the cut",
        "/readyz 200 after the heal",
        "a task submitted at the heal finished",
    ];
    let mut figures: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    for run in 1..=common::runs() {
        let seconds = one_run(&bench).await?;
        println!(
            "run {run}: {}",
            names
                .iter()
                .zip(&seconds)
                .map(|(name, s)| format!("{name} {s:.1} s"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        for (figure, s) in figures.iter_mut().zip(seconds) {
            figure.push(s);
        }
    }
    println!();
    println!("| black-holed connections, default settings | median | best | worst |");
    println!("|---|---|---|---|");
    let mut json = serde_json::Map::new();
    for (name, runs) in names.iter().zip(figures) {
        let repeated = Repeated::of(runs.clone(), false);
        println!(
            "| {name} | {:.1} s | {:.1} s | {:.1} s |",
            repeated.median(),
            repeated.best,
            repeated.worst
        );
        json.insert(name.to_string(), serde_json::json!(runs));
    }
    common::write_json(
        "black_hole",
        &serde_json::json!({"machine": common::machine(), "seconds": json}),
    )?;
    bench.stop().await;
    Ok(())
}

/// One cut and heal; the seconds of each figure, in the order of `names`.
async fn one_run(bench: &common::Bench) -> anyhow::Result<Vec<f64>> {
    let (name, url) = bench.fresh_db().await?;
    let upstream = host_and_port(&url)?;
    let proxy = BlackHoleProxy::start(upstream.clone()).await;
    let cut_url = url.replacen(&upstream, &format!("127.0.0.1:{}", proxy.port), 1);
    let client = common::connect(&url).await?;
    let port = free_port()?;
    let mut spec = bench.fleet(&cut_url, 1, &common::serve_args());
    spec.http_base_port = Some(port);
    let fleet = Fleet::start(&spec, &client).await?;
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()?;
    until_status(&http, &format!("{base}/readyz"), 200).await?;
    let token = tasklane::service::tokens::create(
        &url,
        &tasklane::service::tokens::TokenSpec {
            app: "bench".into(),
            scope_id: None,
            permissions: vec!["submit".into(), "read".into()],
            name: None,
        },
    )
    .await?
    .secret;
    let pool = Database::from_url(&cut_url)?
        .with_statement_timeout(Some(STATEMENT_TIMEOUT))
        .pool(1)?;
    pool.get().await?.simple_query("SELECT 1").await?;

    let cut = Instant::now();
    proxy.cut();
    let statement = tokio::spawn(async move {
        let failed = match pool.get().await {
            Ok(client) => client.simple_query("SELECT 1").await.is_err(),
            Err(_) => true,
        };
        anyhow::ensure!(failed, "a statement passed a cut path");
        Ok(cut.elapsed())
    });
    until_status(&http, &format!("{base}/readyz"), 503).await?;
    let unready = cut.elapsed();
    let detected = statement.await??;
    tokio::time::sleep_until((cut + CUT_FOR).into()).await;
    let reconnect = proxy
        .accepted_since(cut)
        .first()
        .map(|at| at.duration_since(cut))
        .ok_or_else(|| anyhow::anyhow!("no new connection during the cut"))?;

    proxy.heal();
    let healed = Instant::now();
    until_status(&http, &format!("{base}/readyz"), 200).await?;
    let ready = healed.elapsed();
    let submitted = http
        .post(format!("{base}/v1/tasks"))
        .bearer_auth(&token)
        .json(&serde_json::json!({"task_type": "noop", "scope_id": "s", "effect_key": "after", "input": {}}))
        .timeout(Duration::from_secs(60))
        .send()
        .await?
        .error_for_status()?
        .json::<serde_json::Value>()
        .await?;
    let id = submitted["id"].as_str().unwrap_or_default().to_owned();
    loop {
        let task: serde_json::Value = http
            .get(format!("{base}/v1/tasks/{id}"))
            .bearer_auth(&token)
            .send()
            .await?
            .json()
            .await?;
        if task["state"] == "succeeded" {
            break;
        }
        anyhow::ensure!(
            healed.elapsed() < Duration::from_secs(120),
            "the task never finished"
        );
        tokio::time::sleep(POLL).await;
    }
    let finished = healed.elapsed();
    fleet.stop();
    drop(client);
    bench.drop_db(&name).await?;
    Ok([unready, detected, reconnect, ready, finished]
        .iter()
        .map(Duration::as_secs_f64)
        .collect())
}

async fn until_status(http: &reqwest::Client, url: &str, want: u16) -> anyhow::Result<()> {
    let started = Instant::now();
    loop {
        if let Ok(answer) = http.get(url).send().await {
            if answer.status().as_u16() == want {
                return Ok(());
            }
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(120),
            "{url} never answered {want}"
        );
        tokio::time::sleep(POLL).await;
    }
}

fn host_and_port(url: &str) -> anyhow::Result<String> {
    let config: tokio_postgres::Config = url.parse()?;
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
        _ => anyhow::bail!("the bench database is reached over TCP"),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    Ok(format!("{host}:{port}"))
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}
