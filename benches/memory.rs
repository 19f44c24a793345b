//! Memory of a replica: resident set when idle (started, registered, listening, polling)
//! and its peak (VmHWM) while it works off 50,000 queued `noop` tasks, read from
//! `/proc/<pid>/status` of a real `tasklane serve` process.
//!
//! `cargo bench --bench memory` (env: `BENCH_RUNS`, `BENCH_TASKS`, `BENCH_SERVE_ARGS`,
//! `BENCH_DATABASE_URL`).

mod common;

use std::time::Duration;

use tasklane::load::drain;
use tasklane::load::fleet::Fleet;
use tasklane::load::stats::Repeated;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let bench = common::Bench::start().await?;
    let tasks: i64 = std::env::var("BENCH_TASKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000);
    let serve_args = common::serve_args();
    println!("machine: {}", common::machine());
    println!("replica flags: {:?}", serve_args);
    let (mut idle, mut peak, mut details) = (Vec::new(), Vec::new(), Vec::new());
    for run in 1..=common::runs() {
        let (name, url) = bench.fresh_db().await?;
        let mut client = common::connect(&url).await?;
        let fleet = Fleet::start(&bench.fleet(&url, 1, &serve_args), &client).await?;
        // Idle: a few poll intervals and registry heartbeats after the start.
        tokio::time::sleep(Duration::from_secs(5)).await;
        let at_rest = fleet.memory()[0];
        let drained = drain::drain(&mut client, &fleet, "memory", tasks).await?;
        fleet.stop();
        bench.drop_db(&name).await?;
        let under = drained.memory[0];
        println!(
            "run {run}: idle RSS {:.1} MiB (peak so far {:.1}), after {} tasks at {:.0}/s: peak RSS {:.1} MiB",
            at_rest.rss_mib, at_rest.peak_rss_mib, drained.tasks, drained.tasks_per_second, under.peak_rss_mib
        );
        idle.push(at_rest.rss_mib);
        peak.push(under.peak_rss_mib);
        details.push(serde_json::json!({"run": run, "idle": at_rest, "drain": drained}));
    }
    let (idle, peak) = (Repeated::of(idle, false), Repeated::of(peak, false));
    println!();
    println!("| memory, one replica | best | worst |");
    println!("|---|---|---|");
    println!(
        "| idle RSS | {:.1} MiB | {:.1} MiB |",
        idle.best, idle.worst
    );
    println!(
        "| peak RSS under drain ({tasks} noop) | {:.1} MiB | {:.1} MiB |",
        peak.best, peak.worst
    );
    common::write_json(
        "memory",
        &serde_json::json!({"machine": common::machine(), "serve_args": serve_args, "tasks": tasks,
                            "idle_rss_mib": idle, "drain_peak_rss_mib": peak, "runs": details}),
    )?;
    bench.stop().await;
    Ok(())
}
