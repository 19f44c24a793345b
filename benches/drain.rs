//! Drain: backlogs of 50,000 and 200,000 queued `noop` tasks worked off by 1, 2 and 3
//! `tasklane serve` replicas, each figure beside the raw-SQL baseline (pgbench
//! claim-one/complete-one and claim-50/complete-50 on a bare table) and the peers
//! (Graphile Worker, pg-boss: benches/common/peers.rs) draining as many jobs on the same
//! server in the same round, and checked: every task must end succeeded with exactly its
//! queued/running/succeeded events.
//!
//! Every system is timed the same way: its workers are started and idle (connected,
//! polling or listening) before the backlog appears; the backlog is queued where they
//! cannot see it (tasklane: behind its paused type; the peers: inside one open
//! transaction), the WAL counters are sampled after a checkpoint, then the backlog is
//! made visible in one commit (which wakes the workers), and the clock runs from that
//! commit to the last job gone. Two sizes, so that start-up cannot matter either way.
//!
//! `BENCH_BIN_BEFORE=path/to/tasklane` adds, in every round, a drain by one replica of
//! that binary (another commit's build) on a database it migrated itself, so a change
//! is measured against the build before it in the same rounds as the baselines.
//!
//! `cargo bench --bench drain` (env: `BENCH_RUNS`, `BENCH_TASKS` (sizes, comma-separated,
//! default `50000,200000`), `BENCH_MAX_REPLICAS`, `BENCH_SERVE_ARGS`,
//! `BENCH_DATABASE_URL`, `BENCH_PEERS=0`, `BENCH_BIN_BEFORE`; see benches/RESULTS.md).

mod common;

use common::peers::Peer;
use tasklane::load::drain;
use tasklane::load::fleet::{Fleet, FleetSpec};
use tasklane::load::stats::Repeated;
use tasklane::load::wal::WalUse;

/// Every figure of one backlog size, round after round.
struct Size {
    tasks: i64,
    /// Claim-50's rate in each round, to read each figure as a share of it.
    claim_50: Vec<f64>,
    peers: Vec<Vec<f64>>,
    peer_wal: Vec<Vec<WalUse>>,
    /// By replica count.
    drains: Vec<Vec<f64>>,
    drain_wal: Vec<Vec<WalUse>>,
    before: Vec<f64>,
    before_wal: Vec<WalUse>,
}

impl Size {
    fn new(tasks: i64, max_replicas: usize) -> Size {
        Size {
            tasks,
            claim_50: Vec::new(),
            peers: vec![Vec::new(); Peer::ALL.len()],
            peer_wal: vec![Vec::new(); Peer::ALL.len()],
            drains: vec![Vec::new(); max_replicas],
            drain_wal: vec![Vec::new(); max_replicas],
            before: Vec::new(),
            before_wal: Vec::new(),
        }
    }
}

/// The backlog sizes to drain: `BENCH_TASKS`, comma-separated.
fn sizes() -> Vec<i64> {
    let sizes: Vec<i64> = std::env::var("BENCH_TASKS")
        .unwrap_or_else(|_| "50000,200000".into())
        .split(',')
        .filter_map(|v| v.trim().parse().ok())
        .collect();
    if sizes.is_empty() {
        vec![50_000, 200_000]
    } else {
        sizes
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let bench = common::Bench::start().await?;
    let runs = common::runs();
    let serve_args = common::serve_args();
    let max_replicas: usize = std::env::var("BENCH_MAX_REPLICAS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    println!("machine: {}", common::machine());
    println!("postgres: {}", bench.settings().await?);
    println!("replica flags: {:?}", serve_args);

    let (mut one, mut fifty, mut own_sql) = (Vec::new(), Vec::new(), Vec::new());
    let mut sizes: Vec<Size> = sizes()
        .into_iter()
        .map(|n| Size::new(n, max_replicas))
        .collect();
    let mut details = Vec::new();
    let peers_on = common::peers::available();
    let before_bin = std::env::var_os("BENCH_BIN_BEFORE").map(std::path::PathBuf::from);
    for run in 1..=runs {
        println!("run {run}: load {}", common::load_average());
        let (name, url) = bench.fresh_db().await?;
        let b1 = common::pgbench::run(&url, "claim_one", 300_000, 4, 8).await?;
        let b50 = common::pgbench::run(&url, "claim_50", 1_500_000, 4, 8).await?;
        let own = common::pgbench::tasklane_sql(&url, 400_000, 4, 8).await?;
        bench.drop_db(&name).await?;
        println!(
            "run {run}: pgbench claim-one {:.0} jobs/s, claim-50 {:.0} jobs/s, tasklane SQL x100 {:.0} tasks/s",
            b1.jobs_per_second, b50.jobs_per_second, own.jobs_per_second
        );
        one.push(b1.jobs_per_second);
        fifty.push(b50.jobs_per_second);
        own_sql.push(own.jobs_per_second);
        for size in &mut sizes {
            size.claim_50.push(b50.jobs_per_second);
            if peers_on {
                race_peers(&bench, run, size, &mut details).await?;
            }
            for replicas in 1..=max_replicas {
                let spec = bench.fleet("", replicas, &serve_args);
                let (drained, wal) = race_tasklane(&bench, spec, size.tasks, None).await?;
                let rate = drained.tasks_per_second;
                println!(
                    "run {run}: {} tasks, {replicas} replica(s) {rate:.0} tasks/s ({:.2} s, {:.0}% of claim-50), peak RSS {:?} MiB, cpu ms/task replica {:.3} postgres {:.3}, {wal}",
                    size.tasks,
                    drained.seconds,
                    100.0 * rate / b50.jobs_per_second,
                    drained.memory.iter().map(|m| m.peak_rss_mib.round()).collect::<Vec<_>>(),
                    drained.replica_cpu_ms_per_task,
                    drained.postgres_cpu_ms_per_task,
                );
                size.drains[replicas - 1].push(rate);
                size.drain_wal[replicas - 1].push(wal);
                details.push(serde_json::json!({"run": run, "tasks": size.tasks, "baseline_claim_50": b50.jobs_per_second, "drain": drained}));
            }
            if let Some(bin) = &before_bin {
                let spec = FleetSpec {
                    bin: bin.clone(),
                    ..bench.fleet("", 1, &serve_args)
                };
                let (drained, wal) = race_tasklane(&bench, spec, size.tasks, Some(bin)).await?;
                let rate = drained.tasks_per_second;
                println!(
                    "run {run}: {} tasks, the build before, 1 replica {rate:.0} tasks/s ({:.0}% of claim-50), {wal}",
                    size.tasks,
                    100.0 * rate / b50.jobs_per_second,
                );
                size.before.push(rate);
                size.before_wal.push(wal);
                details.push(serde_json::json!({"run": run, "tasks": size.tasks, "baseline_claim_50": b50.jobs_per_second, "drain_before": drained}));
            }
        }
        println!("run {run}: done, load {}", common::load_average());
    }
    let one = Repeated::of(one, true);
    let fifty = Repeated::of(fifty, true);
    let own_sql = Repeated::of(own_sql, true);
    println!();
    println!("| figure | best | median | spread | ratio to claim-50 (same run's best) |");
    println!("|---|---|---|---|---|");
    println!(
        "| pgbench claim-one/complete-one | {:.0} jobs/s | {:.0} | {:.0}% | {:.2} |",
        one.best,
        one.median(),
        one.spread() * 100.0,
        one.best / fifty.best
    );
    println!(
        "| pgbench claim-50/complete-50 | {:.0} jobs/s | {:.0} | {:.0}% | 1.00 |",
        fifty.best,
        fifty.median(),
        fifty.spread() * 100.0
    );
    println!(
        "| pgbench tasklane's own claim/settle SQL, x100 | {:.0} tasks/s | {:.0} | {:.0}% | {:.2} |",
        own_sql.best,
        own_sql.median(),
        own_sql.spread() * 100.0,
        own_sql.best / fifty.best
    );
    let summaries: Vec<serde_json::Value> = sizes.iter().map(|s| summarize(s, &fifty)).collect();
    common::write_json(
        "drain",
        &serde_json::json!({
            "machine": common::machine(),
            "postgres": bench.settings().await?,
            "serve_args": serve_args,
            "pgbench_claim_one": one,
            "pgbench_claim_50": fifty,
            "pgbench_tasklane_sql_100": own_sql,
            "sizes": summaries,
            "runs": details,
        }),
    )?;
    bench.stop().await;
    Ok(())
}

/// Each peer drains `size.tasks` jobs on a fresh database of the same server.
async fn race_peers(
    bench: &common::Bench,
    run: usize,
    size: &mut Size,
    details: &mut Vec<serde_json::Value>,
) -> anyhow::Result<()> {
    let claim_50 = size.claim_50.last().copied().unwrap_or(1.0);
    for (i, peer) in Peer::ALL.into_iter().enumerate() {
        let (name, url) = bench.fresh_db().await?;
        let drained = common::peers::drain(peer, &url, size.tasks).await?;
        bench.drop_db(&name).await?;
        let wal = drained.wal.unwrap_or_default();
        println!(
            "run {run}: {} jobs, {} {:.0} jobs/s ({:.2} s, first job after {:.3} s, {:.0}% of claim-50), {wal}",
            size.tasks,
            peer.name(),
            drained.jobs_per_second,
            drained.seconds,
            drained.first_job_seconds,
            100.0 * drained.jobs_per_second / claim_50,
        );
        size.peers[i].push(drained.jobs_per_second);
        size.peer_wal[i].push(wal);
        details.push(serde_json::json!({"run": run, "tasks": size.tasks, "peer": drained}));
    }
    Ok(())
}

/// One drain of `tasks` by the fleet `spec` (its database URL filled in here) on a fresh
/// database migrated by `before` when given (another build), else by this build:
/// what it measured and what it wrote to the WAL.
async fn race_tasklane(
    bench: &common::Bench,
    spec: FleetSpec,
    tasks: i64,
    before: Option<&std::path::PathBuf>,
) -> anyhow::Result<(drain::Drained, WalUse)> {
    let (name, url) = match before {
        Some(bin) => bench.fresh_db_for(bin).await?,
        None => bench.fresh_db().await?,
    };
    let mut client = common::connect(&url).await?;
    let spec = FleetSpec {
        database_url: url.clone(),
        ..spec
    };
    let fleet = Fleet::start(&spec, &client).await?;
    let mut drained = drain::drain(&mut client, &fleet, "drain", tasks).await?;
    fleet.stop();
    let wal = drained.finish_wal(&client).await?;
    if common::waldump::wanted() {
        let shares = common::waldump::by_relation(&client, &drained.wal_start).await?;
        let who = if before.is_some() {
            "the build before"
        } else {
            "tasklane"
        };
        let title = format!("{who}, {} replica(s), {tasks} tasks", spec.replicas);
        common::waldump::print(&title, &shares, tasks);
    }
    bench.drop_db(&name).await?;
    anyhow::ensure!(
        drained.broken == 0,
        "{} tasks were not worked exactly once",
        drained.broken
    );
    Ok((drained, wal))
}

/// Prints one size's tables (rates, ratios in the same rounds, WAL and commits) and
/// returns them for the JSON file.
fn summarize(size: &Size, fifty: &Repeated) -> serde_json::Value {
    println!();
    println!("### {} jobs", size.tasks);
    println!();
    println!("| system | best | median | runs | best ÷ claim-50 best |");
    println!("|---|---|---|---|---|");
    let row = |name: &str, runs: &[f64]| -> Option<Repeated> {
        if runs.is_empty() {
            return None;
        }
        let r = Repeated::of(runs.to_vec(), true);
        let each: Vec<String> = r.runs.iter().map(|v| format!("{v:.0}")).collect();
        println!(
            "| {name} | {:.0} /s | {:.0} | {} | {:.2} |",
            r.best,
            r.median(),
            each.join(" / "),
            r.best / fifty.best
        );
        Some(r)
    };
    let peers: Vec<(Peer, Repeated)> = Peer::ALL
        .into_iter()
        .zip(&size.peers)
        .filter_map(|(p, runs)| row(p.name(), runs).map(|r| (p, r)))
        .collect();
    let drains: Vec<Repeated> = size
        .drains
        .iter()
        .enumerate()
        .filter_map(|(i, runs)| row(&format!("tasklane drain, {} replica(s)", i + 1), runs))
        .collect();
    let before = row("tasklane, the build before, 1 replica", &size.before);
    println!();
    println!("| tasklane, 1 replica ÷ | best ÷ best | median ÷ median | each round |");
    println!("|---|---|---|---|");
    let mut against: Vec<(String, Repeated, &[f64])> = peers
        .iter()
        .zip(&size.peers)
        .map(|((p, r), runs)| (p.name().to_owned(), r.clone(), runs.as_slice()))
        .collect();
    against.push((
        "pgbench claim-50".into(),
        Repeated::of(size.claim_50.clone(), true),
        size.claim_50.as_slice(),
    ));
    if let Some(one) = drains.first() {
        for (name, r, runs) in &against {
            let each: Vec<String> = one
                .runs
                .iter()
                .zip(runs.iter())
                .map(|(t, p)| format!("{:.2}", t / p))
                .collect();
            println!(
                "| {name} | {:.2} | {:.2} | {} |",
                one.best / r.best,
                one.median() / r.median(),
                each.join(" / ")
            );
        }
    }
    print_wal(size);
    serde_json::json!({
        "tasks": size.tasks,
        "peers": peers.iter().map(|(p, r)| serde_json::json!({"peer": p.name(), "jobs_per_second": r})).collect::<Vec<_>>(),
        "drain": drains.iter().enumerate().map(|(i, r)| serde_json::json!({"replicas": i + 1, "tasks_per_second": r})).collect::<Vec<_>>(),
        "drain_before": before,
    })
}

/// The WAL and commits per task of every system at one size, medians of the rounds.
fn print_wal(size: &Size) {
    println!();
    println!("| system (median of runs) | WAL bytes/task | WAL records/task | FPI/task | WAL flushes/1,000 | commits/1,000 |");
    println!("|---|---|---|---|---|---|");
    let rows = Peer::ALL
        .iter()
        .map(|p| p.name().to_owned())
        .zip(size.peer_wal.iter())
        .chain(
            size.drain_wal
                .iter()
                .enumerate()
                .map(|(i, w)| (format!("tasklane drain, {} replica(s)", i + 1), w)),
        )
        .chain(std::iter::once((
            "the build before, 1 replica".to_owned(),
            &size.before_wal,
        )));
    for (name, runs) in rows {
        if runs.is_empty() {
            continue;
        }
        let median =
            |f: fn(&WalUse) -> f64| Repeated::of(runs.iter().map(f).collect(), false).median();
        println!(
            "| {name} | {:.0} | {:.1} | {:.3} | {:.1} | {:.1} |",
            median(|w| w.wal_bytes_per_task),
            median(|w| w.wal_records_per_task),
            median(|w| w.full_page_images_per_task),
            median(|w| w.flushes_per_1000_tasks),
            median(|w| w.commits_per_1000_tasks),
        );
    }
}
