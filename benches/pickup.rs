//! Pickup latency with idle workers: 200 submits 20 ms apart, each timed from the
//! submit's commit to the moment its handler starts (a probe handler records it in the
//! same process, so both instants come from one clock). Two paths:
//!
//! - same replica: the submitting replica also works (an HTTP submit to any worker
//!   replica): it wakes its own claim loop directly;
//! - other replica: the submitting replica has no workers; the worker replica hears the
//!   debounced NOTIFY on its LISTEN connection.
//!
//! `cargo bench --bench pickup` (env: `BENCH_RUNS`, `BENCH_DATABASE_URL`).

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use clap::Parser;
use tasklane::config::ServeConfig;
use tasklane::load::stats::{Repeated, Summary};
use tasklane::load::submit;
use tasklane::server::Replica;
use tasklane::task::settlement::Success;
use tasklane::worker::{Handler, HandlerError, TaskContext};
use uuid::Uuid;

const SUBMITS: u64 = 200;
const GAP: Duration = Duration::from_millis(20);

type Starts = Arc<Mutex<HashMap<Uuid, SystemTime>>>;

/// Records when each attempt's handler starts, then succeeds.
struct Probe(Starts);

#[async_trait::async_trait]
impl Handler for Probe {
    async fn run(&self, ctx: TaskContext) -> Result<Success, HandlerError> {
        self.0
            .lock()
            .unwrap()
            .insert(ctx.task.id, SystemTime::now());
        Ok(Success::default())
    }
}

#[derive(Parser)]
struct Flags {
    #[command(flatten)]
    serve: ServeConfig,
}

async fn replica(
    url: &str,
    types: &std::path::Path,
    roles: &str,
    starts: &Starts,
) -> anyhow::Result<Replica> {
    let flags = Flags::parse_from([
        "pickup",
        "--database-url",
        url,
        "--roles",
        roles,
        "--no-migrate",
        "--task-types",
        types.to_str().unwrap(),
    ]);
    let custom: HashMap<String, Arc<dyn Handler>> = HashMap::from([(
        "probe".to_owned(),
        Arc::new(Probe(starts.clone())) as Arc<dyn Handler>,
    )]);
    Replica::start(
        &flags.serve,
        custom,
        &tasklane::telemetry::Telemetry::local(),
    )
    .await
}

/// 200 submits through `via`, 20 ms apart; pickup of each.
async fn measure(via: &Replica, starts: &Starts, run: &str) -> anyhow::Result<Summary> {
    let mut accepted = Vec::new();
    let mut next = tokio::time::Instant::now();
    for n in 0..SUBMITS {
        tokio::time::sleep_until(next).await;
        next += GAP;
        let request = submit::request(run, n, "probe", &serde_json::json!({}));
        accepted.push(
            submit::submit(&via.tasklane, "pickup", &request)
                .await
                .map_err(anyhow::Error::msg)?,
        );
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let starts = starts.lock().unwrap();
    let mut samples = Vec::new();
    for a in &accepted {
        let start = starts
            .get(&a.id)
            .ok_or_else(|| anyhow::anyhow!("task {} never started", a.id))?;
        samples.push(start.duration_since(a.committed_at).unwrap_or_default());
    }
    Ok(Summary::of(&samples))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let bench = common::Bench::start().await?;
    println!("machine: {}", common::machine());
    println!("postgres: {}", bench.settings().await?);
    let types =
        std::env::temp_dir().join(format!("tasklane-pickup-types-{}.toml", std::process::id()));
    std::fs::write(
        &types,
        "[[task_type]]\nname = \"probe\"\nexecutor = \"custom\"\n",
    )?;
    let (mut same_p50, mut same_p99, mut other_p50, mut other_p99) =
        (vec![], vec![], vec![], vec![]);
    let mut details = Vec::new();
    for run in 1..=common::runs() {
        let (name, url) = bench.fresh_db().await?;
        let starts: Starts = Default::default();
        let worker = replica(&url, &types, "worker,maintenance", &starts).await?;
        let submitter = replica(&url, &types, "api", &starts).await?;
        tokio::time::sleep(Duration::from_millis(500)).await; // LISTEN connected
        let same = measure(&worker, &starts, &format!("same-{run}")).await?;
        let other = measure(&submitter, &starts, &format!("other-{run}")).await?;
        println!("run {run}: same replica  {}", same.cell());
        println!("run {run}: other replica {}", other.cell());
        same_p50.push(same.p50_ms);
        same_p99.push(same.p99_ms);
        other_p50.push(other.p50_ms);
        other_p99.push(other.p99_ms);
        details.push(serde_json::json!({"run": run, "same_replica": same, "other_replica": other}));
        submitter.stop().await;
        worker.stop().await;
        bench.drop_db(&name).await?;
    }
    let rows = [
        (
            "same replica (local wake)",
            Repeated::of(same_p50, false),
            Repeated::of(same_p99, false),
        ),
        (
            "other replica (NOTIFY)",
            Repeated::of(other_p50, false),
            Repeated::of(other_p99, false),
        ),
    ];
    println!();
    println!(
        "| pickup, {SUBMITS} submits {} ms apart | p50 best (worst) | p99 best (worst) |",
        GAP.as_millis()
    );
    println!("|---|---|---|");
    for (label, p50, p99) in &rows {
        println!(
            "| {label} | {:.2} ms ({:.2}) | {:.2} ms ({:.2}) |",
            p50.best, p50.worst, p99.best, p99.worst
        );
    }
    common::write_json(
        "pickup",
        &serde_json::json!({
            "machine": common::machine(),
            "postgres": bench.settings().await?,
            "same_replica": {"p50_ms": rows[0].1, "p99_ms": rows[0].2},
            "other_replica": {"p50_ms": rows[1].1, "p99_ms": rows[1].2},
            "runs": details,
        }),
    )?;
    let _ = std::fs::remove_file(&types);
    bench.stop().await;
    Ok(())
}
