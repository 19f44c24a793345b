//! Through a connection pooler: one `tasklane serve` replica behind a real PgBouncer
//! (Debian's package, `pool_mode = transaction`) with a direct URL beside it, against
//! the same replica connected directly, in the same rounds on the same server:
//!
//! - the drain of `BENCH_TASKS` (default 50,000) queued `noop` tasks (tasks/s, WAL and
//!   commits a task), timed as the drain bench times it;
//! - `POST /v1/tasks` at a fixed rate (`BENCH_RATE`, default 1,000/s, open loop, at most
//!   64 requests in flight) for `BENCH_SECONDS` (default 20): submit p50/p99.
//!
//! Each drain also reports where the cores went: CPU ms a task of the replica, of the
//! whole PostgreSQL server and of PgBouncer. Through the pooler each phase also reports
//! PgBouncer's own counters (`SHOW STATS` of the round's database): transactions, their
//! mean time from the pooler's side, and how long clients waited for a server
//! connection, with `SHOW POOLS` sampled every 10 ms (the most clients waiting and
//! server connections active at once). With `BENCH_PROFILE=1` and
//! `pg_stat_statements` preloaded (`BENCH_PG_SETTINGS="shared_preload_libraries=pg_stat_statements
//! pg_stat_statements.track_planning=on"`) it prints the drain's top statements by
//! planning and execution time too, and the submits' likewise.
//!
//! `cargo bench --bench pooler` (env: `BENCH_RUNS`, `BENCH_TASKS`, `BENCH_RATE`,
//! `BENCH_SECONDS`, `BENCH_SERVE_ARGS`, `BENCH_POOLED_SERVE_ARGS` (the pooled
//! replica's flags instead of `BENCH_SERVE_ARGS`), `BENCH_POOLER_NICE` (PgBouncer's
//! niceness, a study), `BENCH_DATABASE_URL`, `BENCH_PROFILE`; see
//! benches/RESULTS.md).

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use tasklane::devdb::Pooler;
use tasklane::load::drain;
use tasklane::load::fleet::Fleet;
use tasklane::load::http_submit::HttpSubmitter;
use tasklane::load::stats::{Repeated, Summary};
use tokio_postgres::Client;

/// Most submits in flight at once, as 64 clients would have.
const IN_FLIGHT: usize = 64;

#[derive(Clone, Copy, PartialEq)]
enum Path {
    Direct,
    Pooled,
}

impl Path {
    fn name(self) -> &'static str {
        match self {
            Path::Direct => "direct",
            Path::Pooled => "through PgBouncer (+ direct URL)",
        }
    }
}

struct Figures {
    drain: Vec<f64>,
    p50: Vec<f64>,
    p99: Vec<f64>,
}

/// What one drain cost, in CPU ms a task.
struct Cores {
    replica: f64,
    server: Option<f64>,
    pooler: Option<f64>,
}

impl std::fmt::Display for Cores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |v: Option<f64>| v.map_or("n/a".to_owned(), |v| format!("{v:.3}"));
        write!(
            f,
            "CPU ms a task: replica {:.3}, PostgreSQL {}, PgBouncer {}",
            self.replica,
            ms(self.server),
            ms(self.pooler)
        )
    }
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let bench = common::Bench::start().await?;
    let runs = common::runs();
    let tasks = env_or("BENCH_TASKS", 50_000) as i64;
    let rate = env_or("BENCH_RATE", 1_000);
    let seconds = env_or("BENCH_SECONDS", 20);
    println!("machine: {}", common::machine());
    println!("postgres: {}", bench.settings().await?);
    let mut figures: Vec<Figures> = (0..2)
        .map(|_| Figures {
            drain: Vec::new(),
            p50: Vec::new(),
            p99: Vec::new(),
        })
        .collect();
    for run in 1..=runs {
        for (i, path) in [Path::Direct, Path::Pooled].into_iter().enumerate() {
            let (name, url) = bench.fresh_db().await?;
            let outcome = one_round(&bench, &url, path, tasks, rate, seconds).await;
            bench.drop_db(&name).await?;
            let (drained, wal, cores, submits) = outcome?;
            println!(
                "run {run}: {}: drain {drained:.0} tasks/s ({wal}; {cores}), submits at {rate}/s {}",
                path.name(),
                submits.cell()
            );
            figures[i].drain.push(drained);
            figures[i].p50.push(submits.p50_ms);
            figures[i].p99.push(submits.p99_ms);
        }
    }
    println!();
    println!("| path | drain tasks/s (median; runs) | submit p50 ms | submit p99 ms |");
    println!("|---|---|---|---|");
    for (path, f) in [Path::Direct, Path::Pooled].iter().zip(&figures) {
        let drain = Repeated::of(f.drain.clone(), true);
        println!(
            "| {} | {:.0} ({}) | {:.2} | {:.2} |",
            path.name(),
            drain.median(),
            runs_list(&f.drain),
            Repeated::of(f.p50.clone(), false).median(),
            Repeated::of(f.p99.clone(), false).median(),
        );
    }
    let ratio = |pick: fn(&Figures) -> &Vec<f64>, higher| {
        Repeated::of(pick(&figures[1]).clone(), higher).median()
            / Repeated::of(pick(&figures[0]).clone(), higher).median()
    };
    println!(
        "pooled / direct: drain {:.2}x, submit p99 {:.2}x",
        ratio(|f| &f.drain, true),
        ratio(|f| &f.p99, false)
    );
    bench.stop().await;
    Ok(())
}

fn runs_list(values: &[f64]) -> String {
    values
        .iter()
        .map(|v| format!("{v:.0}"))
        .collect::<Vec<_>>()
        .join(" / ")
}

/// One replica on `url`'s database, directly or through a fresh PgBouncer: its drain,
/// then its submits at `rate`.
async fn one_round(
    bench: &common::Bench,
    url: &str,
    path: Path,
    tasks: i64,
    rate: u64,
    seconds: u64,
) -> anyhow::Result<(f64, String, Cores, Summary)> {
    let pooler = match path {
        Path::Direct => None,
        Path::Pooled => Some(Pooler::in_front_of(url)?),
    };
    let mut args = common::serve_args();
    let fleet_url = match &pooler {
        Some(pooler) => {
            // A study of the pooled replica's own settings: instead of the shared ones.
            if let Ok(own) = std::env::var("BENCH_POOLED_SERVE_ARGS") {
                args = own.split_whitespace().map(str::to_owned).collect();
            }
            args.extend(["--direct-database-url".to_owned(), url.to_owned()]);
            pooler.url_for(url)?
        }
        None => url.to_owned(),
    };
    let mut spec = bench.fleet(&fleet_url, 1, &args);
    spec.http_base_port = Some(common::free_ports(1)?);
    let mut client = common::connect(url).await?;
    let fleet = Fleet::start(&spec, &client).await?;
    let profile = std::env::var("BENCH_PROFILE").is_ok_and(|v| v == "1");
    let backlog = drain::queue(&mut client, &fleet, "drain", tasks).await?;
    if profile {
        client
            .batch_execute(
                "CREATE EXTENSION IF NOT EXISTS pg_stat_statements; \
                 SELECT pg_stat_statements_reset()",
            )
            .await?;
    }
    let pooler_pid = pooler.as_ref().and_then(Pooler::pid);
    // A study: PgBouncer at another scheduling priority (`renice`), to tell its waits for
    // a core from its work.
    if let (Some(pid), Ok(nice)) = (pooler_pid, std::env::var("BENCH_POOLER_NICE")) {
        let status = std::process::Command::new("renice")
            .args(["-n", &nice, "-p", &pid.to_string()])
            .stdout(std::process::Stdio::null())
            .status()?;
        anyhow::ensure!(status.success(), "renice PgBouncer to {nice}");
    }
    let pooler_before = pooler_pid.and_then(tasklane::load::fleet::cpu_seconds);
    let console = match &pooler {
        Some(pooler) => Some(Console::connect(pooler, url).await?),
        None => None,
    };
    let watch = Console::watch(console.as_ref()).await?;
    let mut drained = backlog.release(&mut client, &fleet).await?;
    if let Some(watch) = watch {
        println!("  pooler, drain: {}", watch.end().await?);
    }
    let pooler_used = pooler_pid
        .and_then(tasklane::load::fleet::cpu_seconds)
        .zip(pooler_before)
        .map(|(after, before)| (after - before) * 1000.0 / drained.tasks.max(1) as f64);
    if profile {
        print_statements(&client, path, "drain").await?;
    }
    let wal = drained.finish_wal(&client).await?;
    let cores = Cores {
        replica: drained.replica_cpu_ms_per_task,
        server: drained.postgres_server_cpu_ms_per_task,
        pooler: pooler_used,
    };
    let token = common::create_token(&bench.bin, url, "submits", "submit")?;
    let submitter = HttpSubmitter::new(spec.http_urls(), token)?;
    if profile {
        client
            .batch_execute("SELECT pg_stat_statements_reset()")
            .await?;
    }
    let watch = Console::watch(console.as_ref()).await?;
    let submits = at_rate(Arc::new(submitter), rate, Duration::from_secs(seconds)).await;
    if let Some(watch) = watch {
        println!("  pooler, submits: {}", watch.end().await?);
    }
    if profile {
        print_statements(&client, path, "submits").await?;
    }
    fleet.stop();
    Ok((drained.tasks_per_second, wal.to_string(), cores, submits))
}

/// A phase's statements by planning and execution time (`pg_stat_statements`, this
/// database only), the heaviest first.
async fn print_statements(client: &Client, path: Path, phase: &str) -> anyhow::Result<()> {
    let rows = client
        .query(
            "SELECT calls, total_plan_time, total_exec_time, \
                    regexp_replace(left(query, 400), '\\s+', ' ', 'g') \
             FROM pg_stat_statements \
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
             ORDER BY total_plan_time + total_exec_time DESC LIMIT 12",
            &[],
        )
        .await?;
    println!(
        "  {} {phase}, top statements: calls, planning ms, execution ms, text",
        path.name()
    );
    for row in rows {
        let (calls, plan, exec, text): (i64, f64, f64, String) =
            (row.get(0), row.get(1), row.get(2), row.get(3));
        let text: String = text.chars().filter(|c| !c.is_control()).take(110).collect();
        println!("  | {calls} | {plan:.0} | {exec:.0} | {text} |");
    }
    Ok(())
}

/// Submits `noop` tasks at `rate` a second for `length` (open loop: a submit whose turn
/// comes while 64 are in flight waits for one to end); their latencies.
async fn at_rate(submitter: Arc<HttpSubmitter>, rate: u64, length: Duration) -> Summary {
    let latencies = Arc::new(Mutex::new(Vec::new()));
    let slots = Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT));
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let started = Instant::now();
    let mut n = 0u64;
    let mut tasks = tokio::task::JoinSet::new();
    while started.elapsed() < length {
        tick.tick().await;
        let permit = slots.clone().acquire_owned().await.expect("never closed");
        let (submitter, latencies) = (submitter.clone(), latencies.clone());
        let request = tasklane::load::submit::request("pooler", n, "noop", &serde_json::json!({}));
        n += 1;
        tasks.spawn(async move {
            if let Ok(accepted) = submitter.submit(&request).await {
                latencies
                    .lock()
                    .expect("not poisoned")
                    .push(accepted.latency);
            }
            drop(permit);
        });
    }
    while tasks.join_next().await.is_some() {}
    let samples = latencies.lock().expect("not poisoned").clone();
    Summary::of(&samples)
}

/// PgBouncer's admin console, for the counters of one database.
#[derive(Clone)]
struct Console {
    client: Arc<Client>,
    database: String,
}

/// `SHOW STATS` totals of one database (times in µs).
#[derive(Clone, Copy, Default)]
struct Totals {
    xacts: f64,
    queries: f64,
    xact_us: f64,
    wait_us: f64,
}

/// What `SHOW POOLS` showed at its busiest while a phase ran.
#[derive(Clone, Copy, Default)]
struct Busiest {
    samples: u64,
    waiting_samples: u64,
    cl_waiting: u64,
    sv_active: u64,
    maxwait_us: u64,
}

/// A phase being watched: the totals at its start and the sampler of `SHOW POOLS`.
struct Watch {
    console: Console,
    before: Totals,
    stop: tokio::sync::oneshot::Sender<()>,
    sampler: tokio::task::JoinHandle<Busiest>,
}

impl Console {
    async fn connect(pooler: &Pooler, url: &str) -> anyhow::Result<Console> {
        let config: tokio_postgres::Config = url.parse()?;
        let database = config.get_dbname().unwrap_or_default().to_owned();
        let client = common::connect(&pooler.console_url()).await?;
        Ok(Console {
            client: Arc::new(client),
            database,
        })
    }

    /// Starts watching a phase (none without a pooler).
    async fn watch(console: Option<&Console>) -> anyhow::Result<Option<Watch>> {
        let Some(console) = console else {
            return Ok(None);
        };
        let before = console.totals().await?;
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        let sampling = console.clone();
        let sampler = tokio::spawn(async move {
            let mut busiest = Busiest::default();
            let mut tick = tokio::time::interval(Duration::from_millis(10));
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = &mut stopped => return busiest,
                }
                if let Ok(rows) = sampling.rows("SHOW POOLS").await {
                    for row in rows {
                        let number = |name: &str| -> u64 {
                            row.get(name).and_then(|v| v.parse().ok()).unwrap_or(0)
                        };
                        let waiting = number("cl_waiting");
                        busiest.samples += 1;
                        busiest.waiting_samples += u64::from(waiting > 0);
                        busiest.cl_waiting = busiest.cl_waiting.max(waiting);
                        busiest.sv_active = busiest.sv_active.max(number("sv_active"));
                        let maxwait = number("maxwait") * 1_000_000 + number("maxwait_us");
                        busiest.maxwait_us = busiest.maxwait_us.max(maxwait);
                    }
                }
            }
        });
        Ok(Some(Watch {
            console: console.clone(),
            before,
            stop,
            sampler,
        }))
    }

    /// The rows of an admin command for this database.
    async fn rows(&self, command: &str) -> anyhow::Result<Vec<tokio_postgres::SimpleQueryRow>> {
        Ok(self
            .client
            .simple_query(command)
            .await?
            .into_iter()
            .filter_map(|message| match message {
                tokio_postgres::SimpleQueryMessage::Row(row) => Some(row),
                _ => None,
            })
            .filter(|row| row.get("database") == Some(self.database.as_str()))
            .collect())
    }

    async fn totals(&self) -> anyhow::Result<Totals> {
        let rows = self.rows("SHOW STATS").await?;
        let row = rows.first().context("no SHOW STATS row for the database")?;
        let number =
            |name: &str| -> f64 { row.get(name).and_then(|v| v.parse().ok()).unwrap_or(0.0) };
        Ok(Totals {
            xacts: number("total_xact_count"),
            queries: number("total_query_count"),
            xact_us: number("total_xact_time"),
            wait_us: number("total_wait_time"),
        })
    }
}

impl Watch {
    async fn end(self) -> anyhow::Result<String> {
        let after = self.console.totals().await?;
        let _ = self.stop.send(());
        let busiest = self.sampler.await?;
        let xacts = (after.xacts - self.before.xacts).max(1.0);
        let wait_us = after.wait_us - self.before.wait_us;
        Ok(format!(
            "{:.0} transactions ({:.0} statements), {:.0} µs a transaction as the pooler \
             sees it; clients waited for a server {:.0} ms in all ({:.1} µs a transaction); \
             SHOW POOLS every 10 ms: cl_waiting > 0 in {} of {} samples (most {}), \
             sv_active at most {}, maxwait at most {:.1} ms",
            xacts,
            after.queries - self.before.queries,
            (after.xact_us - self.before.xact_us) / xacts,
            wait_us / 1000.0,
            wait_us / xacts,
            busiest.waiting_samples,
            busiest.samples,
            busiest.cl_waiting,
            busiest.sv_active,
            busiest.maxwait_us as f64 / 1000.0,
        ))
    }
}
