//! Scale: does claim+finish throughput hold when the table is big? One replica works
//! off 100,000 queued `noop` tasks on an empty table, and the same 100,000 beside
//! 1,000,000 finished tasks (with their 3,000,000 events) that a deployment keeps until
//! pruning. The ratio loaded/empty is the figure; the partial indexes on claimable and
//! leased rows are what should keep it near 1.
//!
//! Beside each drain it reports the autovacuum and autoanalyze runs that fell inside
//! it, per table: on the loaded table the drain's own changes (100,000 inserts and two
//! updates each) cross autovacuum's thresholds on 1,000,000 rows, and one run in
//! three once drained far slower than the others.
//!
//! `cargo bench --bench scale` (env: `BENCH_RUNS`, `BENCH_SCALE_HISTORY`,
//! `BENCH_SCALE_QUEUED`, `BENCH_SERVE_ARGS`, `BENCH_DATABASE_URL`). Loading the history
//! takes a minute or two; it is loaded once and reused by every run.

mod common;

use tasklane::load::drain;
use tasklane::load::fleet::Fleet;
use tasklane::load::stats::Repeated;
use tasklane::load::store as load_store;

fn env(name: &str, default: i64) -> i64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let bench = common::Bench::start().await?;
    let history = env("BENCH_SCALE_HISTORY", 1_000_000);
    let queued = env("BENCH_SCALE_QUEUED", 100_000);
    let serve_args = common::serve_args();
    println!("machine: {}", common::machine());
    println!("postgres: {}", bench.settings().await?);
    println!("replica flags: {:?}", serve_args);

    let (loaded_name, loaded_url) = bench.fresh_db().await?;
    let started = std::time::Instant::now();
    drain::add_history(&common::connect(&loaded_url).await?, "history", history).await?;
    println!(
        "history: {history} finished tasks loaded in {:.0} s",
        started.elapsed().as_secs_f64()
    );

    let (mut empty, mut loaded, mut details) = (Vec::new(), Vec::new(), Vec::new());
    for run in 1..=common::runs() {
        let (name, url) = bench.fresh_db().await?;
        let e = drain_once(&bench, &url, &format!("scale-{run}"), queued, &serve_args).await?;
        bench.drop_db(&name).await?;
        // The previous run's tasks stay as history; autovacuum would have vacuumed them.
        let vacuum = common::connect(&loaded_url).await?;
        vacuum.batch_execute("VACUUM tasklane.tasks").await?;
        vacuum.batch_execute("VACUUM tasklane.task_events").await?;
        let l = drain_once(
            &bench,
            &loaded_url,
            &format!("scale-{run}"),
            queued,
            &serve_args,
        )
        .await?;
        println!(
            "run {run}: empty {:.0} tasks/s, loaded {:.0} tasks/s, ratio {:.2}; upkeep during the drains: empty [{}], loaded [{}]",
            e.drained.tasks_per_second,
            l.drained.tasks_per_second,
            l.drained.tasks_per_second / e.drained.tasks_per_second,
            e.upkeep,
            l.upkeep,
        );
        empty.push(e.drained.tasks_per_second);
        loaded.push(l.drained.tasks_per_second);
        details.push(serde_json::json!({"run": run, "empty": e, "loaded": l}));
    }
    let ratios: Vec<f64> = empty.iter().zip(&loaded).map(|(e, l)| l / e).collect();
    let (empty, loaded, ratio) = (
        Repeated::of(empty, true),
        Repeated::of(loaded, true),
        Repeated::of(ratios, true),
    );
    println!();
    println!("| scale, {queued} queued | best | spread |");
    println!("|---|---|---|");
    println!(
        "| empty table | {:.0} tasks/s | {:.0}% |",
        empty.best,
        empty.spread() * 100.0
    );
    println!(
        "| + {history} finished | {:.0} tasks/s | {:.0}% |",
        loaded.best,
        loaded.spread() * 100.0
    );
    println!(
        "| ratio (per run: {:?}) | {:.2} | |",
        ratio
            .runs
            .iter()
            .map(|r| (r * 100.0).round() / 100.0)
            .collect::<Vec<_>>(),
        ratio.best
    );
    common::write_json(
        "scale",
        &serde_json::json!({
            "machine": common::machine(),
            "postgres": bench.settings().await?,
            "history": history, "queued": queued, "serve_args": serve_args,
            "empty": empty, "loaded": loaded, "ratio": ratio, "runs": details,
        }),
    )?;
    bench.drop_db(&loaded_name).await?;
    bench.stop().await;
    Ok(())
}

/// One drain and the table upkeep that ran during it.
#[derive(serde::Serialize)]
struct Measured {
    #[serde(flatten)]
    drained: drain::Drained,
    /// `table: autovacuums/autoanalyzes/tasklane's vacuums` of the tables that had
    /// any while the drain ran (enqueueing included).
    upkeep: String,
}

async fn drain_once(
    bench: &common::Bench,
    url: &str,
    app: &str,
    queued: i64,
    serve_args: &[String],
) -> anyhow::Result<Measured> {
    let mut client = common::connect(url).await?;
    let before = load_store::relations(&client).await?;
    let fleet = Fleet::start(&bench.fleet(url, 1, serve_args), &client).await?;
    let drained = drain::drain(&mut client, &fleet, app, queued).await?;
    fleet.stop();
    anyhow::ensure!(
        drained.broken == 0,
        "{} tasks were not worked exactly once",
        drained.broken
    );
    let after = load_store::relations(&client).await?;
    let upkeep = after
        .iter()
        .filter_map(|a| {
            let b = before.iter().find(|b| b.name == a.name)?;
            let runs = (
                a.autovacuums - b.autovacuums,
                a.autoanalyzes - b.autoanalyzes,
                a.vacuums - b.vacuums,
            );
            (runs != (0, 0, 0)).then(|| format!("{}: {}/{}/{}", a.name, runs.0, runs.1, runs.2))
        })
        .collect::<Vec<_>>()
        .join(", ");
    Ok(Measured { drained, upkeep })
}
