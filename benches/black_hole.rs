//! How fast a replica finds that its connections to PostgreSQL are black-holed, with
//! the default connection settings, and how fast it works again. One real
//! `tasklane serve` reaches its database through a proxy
//! (`tasklane::devdb::BlackHoleProxy`), in two scenarios per run:
//!
//! - the open connections cut without a close, new ones forwarded (a load balancer that
//!   forgot its connections): from the cut, the first `/readyz` 503, the first new
//!   connection, `/readyz` 200 again, and a task submitted at the cut finished;
//! - everything cut, new connections taken and never forwarded, for [`CUT_FOR`], then
//!   healed: from the cut, the first `/readyz` 503, a pooled statement's failure (a pool
//!   made as the replica makes its own, the statement sent just after the cut) and the
//!   first new connection tried; from the heal, `/readyz` 200 again and a task
//!   submitted then finished.
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
        "open connections cut: /readyz 503 after the cut",
        "open connections cut: first new connection after the cut",
        "open connections cut: /readyz 200 after the cut",
        "open connections cut: a task submitted at the cut finished",
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
    let (proxy, cut_url) = BlackHoleProxy::in_front_of(&url).await?;
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

    // The open connections cut, new ones forwarded.
    let cut = Instant::now();
    proxy.cut_open_connections();
    let submitted = tokio::spawn(finish_a_task(
        http.clone(),
        base.clone(),
        token.clone(),
        "first",
    ));
    until_status(&http, &format!("{base}/readyz"), 503).await?;
    let open_unready = cut.elapsed();
    until_status(&http, &format!("{base}/readyz"), 200).await?;
    let open_ready = cut.elapsed();
    submitted.await??;
    let open_finished = cut.elapsed();
    let open_reconnect = first_connection(&proxy, cut)?;

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
    let reconnect = first_connection(&proxy, cut)?;

    proxy.heal();
    let healed = Instant::now();
    until_status(&http, &format!("{base}/readyz"), 200).await?;
    let ready = healed.elapsed();
    finish_a_task(http, base, token, "after").await?;
    let finished = healed.elapsed();
    fleet.stop();
    drop(client);
    bench.drop_db(&name).await?;
    Ok([
        open_unready,
        open_reconnect,
        open_ready,
        open_finished,
        unready,
        detected,
        reconnect,
        ready,
        finished,
    ]
    .iter()
    .map(Duration::as_secs_f64)
    .collect())
}

/// How long after `cut` the proxy took its first new connection.
fn first_connection(proxy: &BlackHoleProxy, cut: Instant) -> anyhow::Result<Duration> {
    proxy
        .accepted_since(cut)
        .first()
        .map(|at| at.duration_since(cut))
        .ok_or_else(|| anyhow::anyhow!("no new connection after the cut"))
}

/// Submits a `noop` task with `key` (the submit itself waits out a dead connection) and
/// waits until it succeeded.
async fn finish_a_task(
    http: reqwest::Client,
    base: String,
    token: String,
    key: &'static str,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let body =
        serde_json::json!({"task_type": "noop", "scope_id": "s", "effect_key": key, "input": {}});
    let submitted = http
        .post(format!("{base}/v1/tasks"))
        .bearer_auth(&token)
        .json(&body)
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
            .timeout(Duration::from_secs(60))
            .send()
            .await?
            .json()
            .await?;
        if task["state"] == "succeeded" {
            return Ok(());
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(120),
            "the task never finished"
        );
        tokio::time::sleep(POLL).await;
    }
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

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}
