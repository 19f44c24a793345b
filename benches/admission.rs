//! Submit throughput with no admission limits vs with global + app + subject limits
//! configured, in the same run (the goal: limits keep ≥ 70% of the throughput):
//! capacity at the three levels, and every kind (capacity, rate, budget) at every level.
//!
//! Each round gets a fresh database (so table growth does not favour either side) and
//! runs `SUBMITTERS` concurrent submitters through `Tasklane::submit` for `SECONDS`;
//! scenarios alternate and the median of `ROUNDS` rounds is reported. Limits are sized
//! so nothing is refused: the cost measured is that of taking reservations.
//!
//! Then, on the tasks just submitted, completion throughput (claim 16 + complete each)
//! from the same number of workers: with limits every completion gives its slots back
//! through the release trigger, so this is the cost of the completion side.
//!
//! `cargo bench --bench admission` (DATABASE_URL, else a private cluster).
//! Environment: `BENCH_SECONDS` (default 4), `BENCH_ROUNDS` (5), `BENCH_SUBMITTERS` (16).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tasklane::admission::{self, LimitKind, LimitSpec};
use tasklane::service::{Owner, Tasklane, Wakeup};
use tasklane::task::{Executor, SubmitRequest, TaskType, TaskTypes};

const APP: &str = "bench";
const SUBJECTS: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Scenario {
    NoLimits,
    /// One global capacity limit: the case a single counter row would serialize.
    GlobalCapacity,
    /// Capacity limits global + app + subject.
    CapacityThreeLevels,
    /// Capacity global + app + subject, rate app + subject, budget app + subject.
    AllKinds,
}

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn spec(
    kind: LimitKind,
    app: Option<&str>,
    subject: Option<String>,
    limit: i64,
    window: Option<i64>,
) -> LimitSpec {
    LimitSpec {
        kind,
        app: app.map(str::to_owned),
        usage_subject: subject,
        limit,
        window_seconds: window,
    }
}

async fn configure(c: &tokio_postgres::Client, scenario: Scenario) -> anyhow::Result<()> {
    if scenario == Scenario::NoLimits {
        return Ok(());
    }
    admission::set_limit(c, &spec(LimitKind::Capacity, None, None, 100_000, None)).await?;
    if scenario == Scenario::GlobalCapacity {
        return Ok(());
    }
    let all = scenario == Scenario::AllKinds;
    admission::set_limit(
        c,
        &spec(LimitKind::Capacity, Some(APP), None, 100_000, None),
    )
    .await?;
    if all {
        admission::set_limit(
            c,
            &spec(LimitKind::Rate, Some(APP), None, 100_000, Some(3600)),
        )
        .await?;
        admission::set_limit(
            c,
            &spec(LimitKind::Budget, Some(APP), None, 1_000_000, None),
        )
        .await?;
    }
    for s in 0..SUBJECTS {
        let subject = Some(format!("user-{s}"));
        admission::set_limit(
            c,
            &spec(
                LimitKind::Capacity,
                Some(APP),
                subject.clone(),
                10_000,
                None,
            ),
        )
        .await?;
        if all {
            admission::set_limit(
                c,
                &spec(
                    LimitKind::Rate,
                    Some(APP),
                    subject.clone(),
                    10_000,
                    Some(3600),
                ),
            )
            .await?;
            admission::set_limit(
                c,
                &spec(LimitKind::Budget, Some(APP), subject, 1_000_000, None),
            )
            .await?;
        }
    }
    for table in ["capacity_slots", "rate_tokens"] {
        c.batch_execute(&format!("VACUUM ANALYZE tasklane.{table}"))
            .await?;
    }
    Ok(())
}

/// Claims and completes from `workers` loops until nothing is claimable or `seconds`
/// pass; returns completions per second.
async fn complete(
    pool: &tasklane::store::Pool,
    workers: usize,
    seconds: u64,
) -> anyhow::Result<f64> {
    use tasklane::store::claim;
    use tasklane::store::lease;
    use tasklane::task::claim::Claimant;
    use tasklane::task::settlement::Success;
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut set = tokio::task::JoinSet::new();
    for w in 0..workers {
        let pool = pool.clone();
        set.spawn(async move {
            let object = pool.get().await?;
            let client = tasklane::store::client(&object);
            let worker_id = format!("bench-{w}");
            let claimant = Claimant {
                worker_id: &worker_id,
                locality: tasklane::task::Locality::Local,
                replica_id: None,
            };
            let types = vec!["noop".to_owned()];
            let mut n = 0u64;
            while Instant::now() < deadline {
                let claimed = claim::claim_without_resources(client, &claimant, &types, 16).await?;
                if claimed.is_empty() {
                    break;
                }
                for task in claimed {
                    let success = Success {
                        result: serde_json::json!({}),
                        usage_units: Some(1),
                        ..Default::default()
                    };
                    lease::complete(client, task.id, task.lease_token, &success).await?;
                    n += 1;
                }
            }
            anyhow::Ok(n)
        });
    }
    let start = Instant::now();
    let mut total = 0;
    while let Some(n) = set.join_next().await {
        total += n??;
    }
    Ok(total as f64 / start.elapsed().as_secs_f64())
}

/// Submits for `seconds` from `submitters` tasks, then completes them; returns submits
/// and completions per second.
async fn run(
    url: &str,
    scenario: Scenario,
    seconds: u64,
    submitters: usize,
) -> anyhow::Result<(f64, f64)> {
    let (admin, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    configure(&admin, scenario).await?;
    let tl = Tasklane::new(
        tasklane::server::pool(url, submitters)?,
        Arc::new(TaskTypes::new([TaskType::new("noop", Executor::Noop)])),
        Wakeup::default(),
        1 << 20,
    );
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut set = tokio::task::JoinSet::new();
    for s in 0..submitters {
        let tl = tl.clone();
        set.spawn(async move {
            let mut n = 0u64;
            while Instant::now() < deadline {
                let request = SubmitRequest {
                    task_type: "noop".into(),
                    scope_id: format!("scope-{s}"),
                    effect_key: format!("k-{s}-{n}"),
                    source_id: None,
                    usage_subject: Some(format!("user-{}", s % SUBJECTS)),
                    input: serde_json::json!({"n": n}),
                    priority: None,
                    deadline_seconds: None,
                    max_attempts: None,
                    on_restart: None,
                    privacy: None,
                };
                tl.submit(&Owner::app(APP), &request)
                    .await
                    .map_err(|e| anyhow::anyhow!("submit: {e}"))?;
                n += 1;
            }
            anyhow::Ok(n)
        });
    }
    let start = Instant::now();
    let mut total = 0;
    while let Some(n) = set.join_next().await {
        total += n??;
    }
    let rate = total as f64 / start.elapsed().as_secs_f64();
    let completions = complete(tl.pool(), submitters, seconds).await?;
    tl.pool().close();
    Ok((rate, completions))
}

async fn fresh_database(server: &str, n: usize) -> anyhow::Result<(String, String)> {
    let name = format!("tasklane_bench_admission_{}_{n}", std::process::id());
    let (c, connection) = tokio_postgres::connect(server, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    c.batch_execute(&format!("CREATE DATABASE {name}")).await?;
    let url = tasklane::devdb::url_with_database(server, &name);
    tasklane::store::migrate::run(&url).await?;
    Ok((name, url))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // `cargo bench` passes --bench; any other argument (a filter) runs nothing.
    let seconds = env("BENCH_SECONDS", 4);
    let rounds = env("BENCH_ROUNDS", 5) as usize;
    let submitters = env("BENCH_SUBMITTERS", 16) as usize;
    let server =
        tasklane::devdb::resolve_server(std::env::var("DATABASE_URL").ok().as_deref()).await?;
    let scenarios = [
        Scenario::NoLimits,
        Scenario::GlobalCapacity,
        Scenario::CapacityThreeLevels,
        Scenario::AllKinds,
    ];
    let mut results: Vec<Vec<f64>> = vec![Vec::new(); scenarios.len()];
    let mut completions: Vec<Vec<f64>> = vec![Vec::new(); scenarios.len()];
    let mut n = 0;
    for round in 0..rounds {
        for (i, scenario) in scenarios.iter().enumerate() {
            let (name, url) = fresh_database(server.url(), n).await?;
            n += 1;
            let (rate, done) = run(&url, *scenario, seconds, submitters).await?;
            println!("round {round} {scenario:?}: {rate:.0} submits/s, {done:.0} completions/s");
            results[i].push(rate);
            completions[i].push(done);
            tasklane::devdb::drop_database(server.url(), &name).await?;
        }
    }
    let base = median(results[0].clone());
    let done_base = median(completions[0].clone());
    println!("\nthroughput, {submitters} clients, {seconds} s x {rounds} rounds (median):");
    for (i, scenario) in scenarios.iter().enumerate() {
        let (m, d) = (median(results[i].clone()), median(completions[i].clone()));
        println!(
            "  {:<20} {:>7.0} submits/s ({:>5.1}%)   {:>7.0} completions/s ({:>5.1}%)",
            format!("{scenario:?}"),
            m,
            100.0 * m / base,
            d,
            100.0 * d / done_base
        );
    }
    server.stop().await;
    Ok(())
}
