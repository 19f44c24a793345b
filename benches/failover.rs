//! How long a PostgreSQL failover stalls the work: a primary with a synchronous
//! streaming standby (both private clusters, durable), two replicas (`tasklane serve`,
//! all roles, as shipped) whose database URL names both hosts with
//! `target_session_attrs=read-write`, and a steady flow of HTTP submits of `noop` tasks
//! (retried with the same effect key until acknowledged). Once the flow is steady the
//! primary stops at once (`pg_ctl stop -m immediate`), the standby is promoted and its
//! `synchronous_standby_names` cleared, as an HA manager does. The primary stays down
//! until a submit has failed for want of a host that takes writes, and for at least
//! `BENCH_OUTAGE_MS` (default 1000), so the replicas have met the outage first.
//!
//! Per run, in seconds from the promotion (`pg_ctl promote -w` returned): to the first
//! acknowledged submit, and to the first task that finished on the new primary (its
//! `finished_at`; one clock, one machine); and, for scale, from the stop to the
//! promotion. Every acknowledged task must then succeed. Each run makes its own pair of
//! clusters.
//!
//! `cargo bench --bench failover` (env: `BENCH_RUNS`, default 3; `BENCH_OUTAGE_MS`;
//! `BENCH_BIN`; benches/RESULTS.md). `BENCH_DURABILITY=off` is refused: commits would
//! wait for no standby.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context as _;
use tasklane::devdb::{ClusterOptions, Replicated};
use tasklane::load::fleet::{self, Fleet};
use tokio_util::sync::CancellationToken;

const REPLICAS: usize = 2;
const DATABASE: &str = "failover";
/// Acknowledged submits before the primary is stopped.
const STEADY: usize = 100;
/// Bound on each wait of a run: generous, so a slow machine gives a slow figure, not
/// an error.
const WITHIN: Duration = Duration::from_secs(120);

/// One run's figures, in seconds.
#[derive(Debug, Clone, Copy, serde::Serialize)]
struct Run {
    primary_down: f64,
    /// From the promotion until one session of the new primary saw the cleared
    /// `synchronous_standby_names` (it polls every 10 ms, so a commit may be released
    /// before): in the JSON only.
    to_released: f64,
    to_first_ack: f64,
    to_first_finished: f64,
    acknowledged: usize,
}

/// The table's columns after the run's number.
const COLUMNS: [&str; 3] = [
    "primary down",
    "promoted → first acknowledged submit",
    "promoted → first finished task",
];

impl Run {
    fn cells(&self) -> [f64; 3] {
        [self.primary_down, self.to_first_ack, self.to_first_finished]
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let runs = common::runs();
    println!("machine: {}", common::machine());
    let bin = std::env::var_os("BENCH_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_tasklane").into());
    let types = fleet::write_task_types(&std::env::temp_dir())?;
    let mut results = Vec::new();
    let mut postgres = String::new();
    for n in 0..runs {
        let pair = Replicated::start(&ClusterOptions {
            durable: common::durable(),
            ..ClusterOptions::default()
        })
        .await?;
        if postgres.is_empty() {
            postgres = common::settings(pair.primary.url()).await?;
            println!("postgres: {postgres} (primary with one synchronous standby)");
        }
        let run = one_run(&pair, &bin, &types).await?;
        let cells = run.cells().map(|c| format!("{c:.3} s"));
        let said: Vec<String> = COLUMNS
            .iter()
            .zip(cells)
            .map(|(c, v)| format!("{c} {v}"))
            .collect();
        println!(
            "run {}: {}; {} acknowledged",
            n + 1,
            said.join(", "),
            run.acknowledged
        );
        results.push(run);
    }
    let _ = std::fs::remove_file(&types);

    println!();
    println!(
        "| run ({REPLICAS} replicas, multi-host URL; seconds) | {} |",
        COLUMNS.join(" | ")
    );
    println!("|---{}|", "|---".repeat(COLUMNS.len()));
    let row = |label: String, cells: [f64; 3]| {
        let cells: Vec<String> = cells.iter().map(|c| format!("{c:.3}")).collect();
        println!("| {label} | {} |", cells.join(" | "));
    };
    for (n, run) in results.iter().enumerate() {
        row((n + 1).to_string(), run.cells());
    }
    let medians = std::array::from_fn(|i| median(results.iter().map(|r| r.cells()[i]).collect()));
    row("median".into(), medians);
    common::write_json(
        "failover",
        &serde_json::json!({
            "machine": common::machine(),
            "postgres": postgres,
            "replicas": REPLICAS,
            "runs": results,
        }),
    )
}

/// The flow, the failover and the figures, on `pair`.
async fn one_run(
    pair: &Replicated,
    bin: &std::path::Path,
    types: &std::path::Path,
) -> anyhow::Result<Run> {
    let admin = common::connect(pair.primary.url()).await?;
    admin
        .batch_execute(&format!("CREATE DATABASE {DATABASE}"))
        .await?;
    let url = format!(
        "postgres://postgres@127.0.0.1:{},127.0.0.1:{}/{DATABASE}?target_session_attrs=read-write",
        pair.primary.port(),
        pair.standby.port()
    );
    tasklane::store::migrate::run(&url).await?;
    let client = common::connect(&url).await?;
    let spec = fleet::FleetSpec {
        bin: bin.to_owned(),
        database_url: url.clone(),
        task_types: types.to_owned(),
        replicas: REPLICAS,
        serve_args: Vec::new(),
        http_base_port: Some(common::free_ports(REPLICAS)?),
        roles: None,
    };
    let fleet = Fleet::start(&spec, &client).await?;
    let bases = spec.http_urls();
    let http = reqwest::Client::new();
    for base in &bases {
        until(&format!("{base} ready"), || async {
            let answer = http.get(format!("{base}/readyz")).send().await;
            answer.is_ok_and(|a| a.status() == 200).then_some(())
        })
        .await?;
    }
    let spec = tasklane::service::tokens::TokenSpec {
        app: "failover".into(),
        scope_id: None,
        permissions: vec!["submit".into(), "read".into()],
        name: None,
    };
    let token = tasklane::service::tokens::create(&url, &spec).await?.secret;
    let tally: Arc<Mutex<Tally>> = Arc::default();
    let stop = CancellationToken::new();
    let flow = tokio::spawn(submit_flow(bases, token, tally.clone(), stop.clone()));
    until("a steady flow", || async {
        (tally.lock().unwrap().acks.len() >= STEADY).then_some(())
    })
    .await?;

    let outage = async {
        let stopped = Instant::now();
        until("a submit to fail while the primary is down", || async {
            let tally = tally.lock().unwrap();
            tally.failed.iter().any(|at| *at > stopped).then_some(())
        })
        .await
        .expect("the replicas meet the outage");
        tokio::time::sleep(outage().saturating_sub(stopped.elapsed())).await;
    };
    let failover = pair.fail_over(outage).await?;
    let promoted = failover.promoted;
    // The promotion on the wall clock, which `finished_at` is read on.
    let promoted_wall = SystemTime::now() - promoted.elapsed();
    let promoted_at: chrono::DateTime<chrono::Utc> = promoted_wall.into();
    let standby = common::connect(&tasklane::devdb::url_with_database(
        pair.standby.url(),
        DATABASE,
    ))
    .await?;
    let first_ack = until("a submit acknowledged after the promotion", || async {
        let tally = tally.lock().unwrap();
        tally
            .acks
            .iter()
            .map(|(_, at)| *at)
            .find(|at| *at > promoted)
    })
    .await?;
    let first_finished = until("a task finished after the promotion", || async {
        standby
            .query_one(
                "SELECT min(finished_at) FROM tasklane.tasks WHERE finished_at > $1",
                &[&promoted_at],
            )
            .await
            .ok()
            .and_then(|row| row.get::<_, Option<chrono::DateTime<chrono::Utc>>>(0))
    })
    .await?;
    stop.cancel();
    flow.await?;
    let ids: Vec<String> = {
        let tally = tally.lock().unwrap();
        tally.acks.iter().map(|(id, _)| id.clone()).collect()
    };
    until("every acknowledged task to succeed", || async {
        let row = standby
            .query_one(
                "SELECT count(*) FILTER (WHERE state = 'succeeded')
                 FROM tasklane.tasks WHERE id = ANY($1::text[]::uuid[])",
                &[&ids],
            )
            .await
            .ok()?;
        (row.get::<_, i64>(0) == ids.len() as i64).then_some(())
    })
    .await?;
    fleet.stop();
    Ok(Run {
        primary_down: (promoted - failover.primary_stopped).as_secs_f64(),
        to_released: (failover.released - promoted).as_secs_f64(),
        to_first_ack: (first_ack - promoted).as_secs_f64(),
        to_first_finished: (first_finished - promoted_at)
            .to_std()
            .context("finished before the promotion")?
            .as_secs_f64(),
        acknowledged: ids.len(),
    })
}

/// What the flow saw: the acknowledged submits (task id, when), and when tries failed.
#[derive(Default)]
struct Tally {
    acks: Vec<(String, Instant)>,
    failed: Vec<Instant>,
}

/// Submits a `noop` task about every 10 ms, round-robin over the replicas, until
/// stopped; a submit that fails or times out is retried with the same key.
async fn submit_flow(
    bases: Vec<String>,
    token: String,
    tally: Arc<Mutex<Tally>>,
    stop: CancellationToken,
) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("an HTTP client");
    let mut turn = 0usize;
    for n in 0.. {
        let body = serde_json::json!({"task_type": "noop", "scope_id": "flow",
                                      "effect_key": format!("flow-{n}"), "input": {}});
        loop {
            turn += 1;
            let base = &bases[turn % bases.len()];
            let sent = http
                .post(format!("{base}/v1/tasks"))
                .bearer_auth(&token)
                .json(&body)
                .send();
            let answer = tokio::select! {
                answer = sent => answer,
                _ = stop.cancelled() => return,
            };
            if let Ok(answer) = answer.and_then(|a| a.error_for_status()) {
                if let Ok(view) = answer.json::<serde_json::Value>().await {
                    let id = view["id"].as_str().unwrap_or_default().to_owned();
                    tally.lock().unwrap().acks.push((id, Instant::now()));
                    break;
                }
            }
            tally.lock().unwrap().failed.push(Instant::now());
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(10)) => {}
                _ = stop.cancelled() => return,
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(10)) => {}
            _ = stop.cancelled() => return,
        }
    }
}

/// Polls `probe` every 5 ms until it yields, for at most [`WITHIN`].
async fn until<T, F, Fut>(what: &str, mut probe: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + WITHIN;
    loop {
        if let Some(value) = probe().await {
            return Ok(value);
        }
        anyhow::ensure!(Instant::now() < deadline, "waited {WITHIN:?} for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// How long the primary stays down at least (`BENCH_OUTAGE_MS`, default 1000).
fn outage() -> Duration {
    let ms = std::env::var("BENCH_OUTAGE_MS")
        .ok()
        .and_then(|v| v.parse().ok());
    Duration::from_millis(ms.unwrap_or(1000))
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}
