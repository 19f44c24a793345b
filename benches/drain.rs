//! Drain: 50,000 queued `noop` tasks worked off by 1, 2 and 3 `tasklane serve`
//! replicas, each figure beside the raw-SQL baseline (pgbench claim-one/complete-one
//! and claim-50/complete-50 on a bare table) and the peers (Graphile Worker, pg-boss:
//! benches/common/peers.rs) draining as many jobs on the same server in the same round,
//! and checked: every task must end succeeded with exactly its queued/running/succeeded
//! events.
//!
//! `BENCH_BIN_BEFORE=path/to/tasklane` adds, in every round, a drain by one replica of
//! that binary (another commit's build) on a database it migrated itself, so a change
//! is measured against the build before it in the same rounds as the baselines.
//!
//! `cargo bench --bench drain` (env: `BENCH_RUNS`, `BENCH_TASKS`, `BENCH_MAX_REPLICAS`,
//! `BENCH_SERVE_ARGS`, `BENCH_DATABASE_URL`, `BENCH_PEERS=0`, `BENCH_BIN_BEFORE`; see
//! benches/RESULTS.md).

mod common;

use tasklane::load::drain;
use tasklane::load::fleet::{Fleet, FleetSpec};
use tasklane::load::stats::Repeated;
use tasklane::load::wal::WalUse;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let bench = common::Bench::start().await?;
    let runs = common::runs();
    let tasks: i64 = std::env::var("BENCH_TASKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000);
    let serve_args = common::serve_args();
    let max_replicas: usize = std::env::var("BENCH_MAX_REPLICAS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    println!("machine: {}", common::machine());
    println!("postgres: {}", bench.settings().await?);
    println!("replica flags: {:?}", serve_args);

    let mut one = Vec::new();
    let mut fifty = Vec::new();
    let mut own_sql = Vec::new();
    let mut drains: Vec<Vec<f64>> = vec![Vec::new(); max_replicas];
    let mut details = Vec::new();
    let peers_on = common::peers::available();
    let mut peers: Vec<Vec<f64>> = vec![Vec::new(); common::peers::Peer::ALL.len()];
    let mut peer_wal: Vec<Vec<WalUse>> = vec![Vec::new(); common::peers::Peer::ALL.len()];
    let mut drain_wal: Vec<Vec<WalUse>> = vec![Vec::new(); max_replicas];
    let before_bin = std::env::var_os("BENCH_BIN_BEFORE").map(std::path::PathBuf::from);
    let (mut before, mut before_wal) = (Vec::new(), Vec::new());
    for run in 1..=runs {
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
        for (i, peer) in common::peers::Peer::ALL.into_iter().enumerate() {
            if !peers_on {
                break;
            }
            let (name, url) = bench.fresh_db().await?;
            let drained = common::peers::drain(peer, &url, tasks).await?;
            bench.drop_db(&name).await?;
            println!(
                "run {run}: {} {:.0} jobs/s ({:.0}% of claim-50), {}",
                peer.name(),
                drained.jobs_per_second,
                100.0 * drained.jobs_per_second / b50.jobs_per_second,
                drained.wal.unwrap_or_default(),
            );
            peers[i].push(drained.jobs_per_second);
            peer_wal[i].push(drained.wal.unwrap_or_default());
            details.push(serde_json::json!({"run": run, "peer": drained}));
        }
        for replicas in 1..=max_replicas {
            let (name, url) = bench.fresh_db().await?;
            let mut client = common::connect(&url).await?;
            let fleet = Fleet::start(&bench.fleet(&url, replicas, &serve_args), &client).await?;
            let mut drained = drain::drain(&mut client, &fleet, "drain", tasks).await?;
            fleet.stop();
            let wal = drained.finish_wal(&client).await?;
            bench.drop_db(&name).await?;
            anyhow::ensure!(
                drained.broken == 0,
                "{} tasks were not worked exactly once",
                drained.broken
            );
            println!(
                "run {run}: {replicas} replica(s) {:.0} tasks/s ({} tasks in {:.2} s, {:.0}% of claim-50), peak RSS {:?} MiB, cpu ms/task replica {:.3} postgres {:.3}",
                drained.tasks_per_second,
                drained.tasks,
                drained.seconds,
                100.0 * drained.tasks_per_second / b50.jobs_per_second,
                drained.memory.iter().map(|m| m.peak_rss_mib.round()).collect::<Vec<_>>(),
                drained.replica_cpu_ms_per_task,
                drained.postgres_cpu_ms_per_task,
            );
            println!("run {run}: {replicas} replica(s) {wal}");
            drains[replicas - 1].push(drained.tasks_per_second);
            drain_wal[replicas - 1].push(wal);
            details.push(serde_json::json!({"run": run, "baseline_claim_50": b50.jobs_per_second, "drain": drained}));
        }
        if let Some(bin) = &before_bin {
            let (name, url) = bench.fresh_db_for(bin).await?;
            let mut client = common::connect(&url).await?;
            let spec = FleetSpec {
                bin: bin.clone(),
                ..bench.fleet(&url, 1, &serve_args)
            };
            let fleet = Fleet::start(&spec, &client).await?;
            let mut drained = drain::drain(&mut client, &fleet, "drain", tasks).await?;
            fleet.stop();
            let wal = drained.finish_wal(&client).await?;
            bench.drop_db(&name).await?;
            anyhow::ensure!(
                drained.broken == 0,
                "the build before: {} tasks were not worked exactly once",
                drained.broken
            );
            println!(
                "run {run}: the build before, 1 replica {:.0} tasks/s ({:.0}% of claim-50), {wal}",
                drained.tasks_per_second,
                100.0 * drained.tasks_per_second / b50.jobs_per_second,
            );
            before.push(drained.tasks_per_second);
            before_wal.push(wal);
            details.push(serde_json::json!({"run": run, "baseline_claim_50": b50.jobs_per_second, "drain_before": drained}));
        }
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
    let mut peer_summary = Vec::new();
    for (peer, runs) in common::peers::Peer::ALL.into_iter().zip(peers) {
        if runs.is_empty() {
            continue;
        }
        let r = Repeated::of(runs, true);
        println!(
            "| {} | {:.0} jobs/s | {:.0} | {:.0}% | {:.2} |",
            peer.name(),
            r.best,
            r.median(),
            r.spread() * 100.0,
            r.best / fifty.best
        );
        peer_summary.push((peer, r));
    }
    let mut summary = Vec::new();
    for (i, runs) in drains.into_iter().enumerate() {
        let r = Repeated::of(runs, true);
        println!(
            "| drain, {} replica(s) | {:.0} tasks/s | {:.0} | {:.0}% | {:.2} |",
            i + 1,
            r.best,
            r.median(),
            r.spread() * 100.0,
            r.best / fifty.best
        );
        if i == 0 {
            for (peer, p) in &peer_summary {
                println!(
                    "|   tasklane, 1 replica ÷ {} | {:.2} (best ÷ best) | {:.2} (median ÷ median) | | |",
                    peer.name(),
                    r.best / p.best,
                    r.median() / p.median()
                );
            }
        }
        summary.push(serde_json::json!({"replicas": i + 1, "tasks_per_second": r}));
    }
    let before_summary = (!before.is_empty()).then(|| Repeated::of(before, true));
    if let Some(r) = &before_summary {
        println!(
            "| drain, 1 replica, the build before | {:.0} tasks/s | {:.0} | {:.0}% | {:.2} |",
            r.best,
            r.median(),
            r.spread() * 100.0,
            r.best / fifty.best
        );
        for (peer, p) in &peer_summary {
            println!(
                "|   the build before, 1 replica ÷ {} | {:.2} (best ÷ best) | {:.2} (median ÷ median) | | |",
                peer.name(),
                r.best / p.best,
                r.median() / p.median()
            );
        }
    }
    println!();
    println!("| system (median of runs) | WAL bytes/task | WAL records/task | FPI/task | WAL flushes/1,000 | commits/1,000 |");
    println!("|---|---|---|---|---|---|");
    let wal_rows = common::peers::Peer::ALL
        .iter()
        .map(|p| p.name().to_owned())
        .zip(peer_wal)
        .chain(
            drain_wal
                .into_iter()
                .enumerate()
                .map(|(i, w)| (format!("tasklane drain, {} replica(s)", i + 1), w)),
        )
        .chain(std::iter::once((
            "the build before, 1 replica".to_owned(),
            before_wal,
        )));
    for (name, runs) in wal_rows {
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
    common::write_json(
        "drain",
        &serde_json::json!({
            "machine": common::machine(),
            "postgres": bench.settings().await?,
            "tasks": tasks,
            "serve_args": serve_args,
            "pgbench_claim_one": one,
            "pgbench_claim_50": fifty,
            "pgbench_tasklane_sql_100": own_sql,
            "drain": summary,
            "drain_before": before_summary,
            "peers": peer_summary.iter().map(|(p, r)| serde_json::json!({"peer": p.name(), "jobs_per_second": r})).collect::<Vec<_>>(),
            "runs": details,
        }),
    )?;
    bench.stop().await;
    Ok(())
}
