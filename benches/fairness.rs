//! Fair turns under a backlog: one replica drains 50,000 queued `noop` tasks of the app
//! `big` while the app `small` submits one task every 20 ms (`tasklane.run_task`, as
//! an application would from its own transaction). Reported: the small app's pickup
//! (its task's `started_at` minus its `created_at`, both the database's clock: from
//! the submit's transaction start to the claim that took it, so the submit's own commit
//! is included), and the big app's drain rate beside the same build's drain of the big
//! app alone in the same round (every big task checked worked exactly once).
//!
//! `cargo bench --bench fairness` (env: `BENCH_RUNS`, `BENCH_TASKS`, `BENCH_SERVE_ARGS`,
//! `BENCH_DATABASE_URL`, `BENCH_DURABILITY`; see benches/RESULTS.md).

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tasklane::load::drain::{self, Drained};
use tasklane::load::fleet::Fleet;
use tasklane::load::stats::{Repeated, Summary};

const GAP: Duration = Duration::from_millis(20);

/// Submits a task of `small` every 20 ms from when the drain resumes `noop` (it pauses
/// the type while it queues the backlog) until `stop`. It reads only the pause table
/// between submits: a query of the queue itself, 50 times a second, would walk the
/// drained rows and tax the drain it measures.
async fn trickle(url: String, stop: Arc<AtomicBool>) -> anyhow::Result<usize> {
    let client = common::connect(&url).await?;
    let paused =
        "SELECT EXISTS (SELECT 1 FROM tasklane.paused_task_types WHERE task_type = 'noop')";
    let mut was_paused = false;
    let mut submitted = 0;
    let mut next = tokio::time::Instant::now();
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep_until(next).await;
        next += GAP;
        if !was_paused || submitted == 0 {
            let now_paused: bool = client.query_one(paused, &[]).await?.get(0);
            was_paused |= now_paused;
            if !was_paused || now_paused {
                continue;
            }
        }
        client
            .execute(
                "SELECT task_id FROM tasklane.run_task(app => 'small', task_type => 'noop', \
                   scope_id => 's', effect_key => $1, input => '{}')",
                &[&format!("small-{submitted}")],
            )
            .await?;
        submitted += 1;
    }
    Ok(submitted)
}

/// The pickups of the small app's tasks submitted while the big app's backlog was still
/// being claimed.
async fn pickups(client: &tokio_postgres::Client) -> anyhow::Result<Vec<Duration>> {
    let rows = client
        .query(
            "SELECT extract(epoch FROM s.started_at - s.created_at)::float8 \
             FROM tasklane.tasks s \
             WHERE s.app = 'small' \
               AND s.created_at < (SELECT max(b.started_at) FROM tasklane.tasks b WHERE b.app = 'big')",
            &[],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| Duration::from_secs_f64(r.get::<_, f64>(0).max(0.0)))
        .collect())
}

/// One drain of `tasks` big tasks on a fresh database, with or without the trickle.
async fn measure(
    bench: &common::Bench,
    tasks: i64,
    with_small: bool,
) -> anyhow::Result<(Drained, Option<Summary>)> {
    let (name, url) = bench.fresh_db().await?;
    let mut client = common::connect(&url).await?;
    let fleet = Fleet::start(&bench.fleet(&url, 1, &common::serve_args()), &client).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let small = with_small.then(|| tokio::spawn(trickle(url.clone(), stop.clone())));
    let drained = drain::drain(&mut client, &fleet, "big", tasks).await;
    stop.store(true, Ordering::Relaxed);
    let submitted = match small {
        Some(handle) => Some(handle.await??),
        None => None,
    };
    let summary = match submitted {
        Some(_) => {
            while drain::pending(&client, "small").await? {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Some(Summary::of(&pickups(&client).await?))
        }
        None => None,
    };
    fleet.stop();
    bench.drop_db(&name).await?;
    let drained = drained?;
    anyhow::ensure!(
        drained.broken == 0,
        "{} tasks were not worked exactly once",
        drained.broken
    );
    Ok((drained, summary))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let bench = common::Bench::start().await?;
    let tasks: i64 = std::env::var("BENCH_TASKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000);
    println!("machine: {}", common::machine());
    println!("postgres: {}", bench.settings().await?);
    println!("replica flags: {:?}", common::serve_args());
    let (mut alone, mut beside, mut ratios, mut p50, mut p99) =
        (vec![], vec![], vec![], vec![], vec![]);
    let mut details = Vec::new();
    for run in 1..=common::runs() {
        let (one, _) = measure(&bench, tasks, false).await?;
        let (two, small) = measure(&bench, tasks, true).await?;
        let small = small.expect("measured with the small app");
        println!(
            "run {run}: big alone {:.0} tasks/s; beside small {:.0} tasks/s ({:.2}); small pickup {}",
            one.tasks_per_second,
            two.tasks_per_second,
            two.tasks_per_second / one.tasks_per_second,
            small.cell()
        );
        anyhow::ensure!(small.count > 0, "no small task ran beside the backlog");
        alone.push(one.tasks_per_second);
        beside.push(two.tasks_per_second);
        ratios.push(two.tasks_per_second / one.tasks_per_second);
        p50.push(small.p50_ms);
        p99.push(small.p99_ms);
        details.push(serde_json::json!({"run": run, "alone": one, "beside_small": two, "small_pickup": small}));
    }
    let (alone, beside, ratios) = (
        Repeated::of(alone, true),
        Repeated::of(beside, true),
        Repeated::of(ratios, true),
    );
    let (p50, p99) = (Repeated::of(p50, false), Repeated::of(p99, false));
    println!();
    println!("| figure | best | median | worst |");
    println!("|---|---|---|---|");
    println!(
        "| drain of `big` alone | {:.0} tasks/s | {:.0} | {:.0} |",
        alone.best,
        alone.median(),
        alone.worst
    );
    println!(
        "| drain of `big` beside `small` | {:.0} tasks/s | {:.0} | {:.0} |",
        beside.best,
        beside.median(),
        beside.worst
    );
    println!(
        "| beside ÷ alone, same round | {:.2} | {:.2} | {:.2} |",
        ratios.best,
        ratios.median(),
        ratios.worst
    );
    println!(
        "| `small` pickup p50 | {:.1} ms | {:.1} | {:.1} |",
        p50.best,
        p50.median(),
        p50.worst
    );
    println!(
        "| `small` pickup p99 | {:.1} ms | {:.1} | {:.1} |",
        p99.best,
        p99.median(),
        p99.worst
    );
    common::write_json(
        "fairness",
        &serde_json::json!({
            "machine": common::machine(),
            "postgres": bench.settings().await?,
            "tasks": tasks,
            "serve_args": common::serve_args(),
            "alone": alone, "beside_small": beside, "ratio": ratios,
            "small_pickup_p50_ms": p50, "small_pickup_p99_ms": p99,
            "runs": details,
        }),
    )?;
    bench.stop().await;
    Ok(())
}
