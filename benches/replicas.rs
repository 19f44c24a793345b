//! Replica sweep: what 1, 2, 4 and 8 `tasklane serve` replicas (roles worker and
//! maintenance, flags as the drain bench's) cost and give on one PostgreSQL. For each
//! count, in every round (the counts in turn, the order reversed every other round so
//! a box that gets busier or quieter favours none), on a fresh database:
//!
//! - **drain**: a backlog of `noop` tasks queued behind its paused type, then released
//!   (`tasklane::load::drain`): tasks/s, the fleet's sessions in `pg_stat_activity`
//!   (sampled every 50 ms: held, and active in a statement), claim statements and the
//!   empty ones (`tasklane_claims_total` from each replica's `/metrics`), the whole
//!   PostgreSQL server's CPU per task (`/proc`), WAL and commits per task (read once the
//!   fleet has stopped);
//! - **trickle**: on a new fleet, single submits 20 ms apart through the service, as
//!   the load generator makes them: pickup from each commit to the task's claim, and the
//!   empty claims each submit's wake-up cost the fleet;
//! - **idle**: then the same fleet with an empty queue, once the database is vacuumed
//!   (so that autovacuum of the drain's dead rows does not fall in it): PostgreSQL CPU
//!   in cores (the database's backends, and the whole server), sessions held, empty
//!   claims/s and transactions/s.
//!
//! Goals: 8 replicas drain at least as fast as 1, at most 1.2× its PostgreSQL CPU a
//! task; an idle cluster of 8 costs PostgreSQL at most 0.02 core.
//!
//! `cargo bench --bench replicas` (env: `BENCH_RUNS`, `BENCH_TASKS` (50,000),
//! `BENCH_REPLICAS` (`1,2,4,8`), `BENCH_TRICKLE` (200 submits), `BENCH_IDLE_SECONDS`
//! (30), `BENCH_SERVE_ARGS`, `BENCH_DATABASE_URL`, `BENCH_DURABILITY`).

mod common;

use std::time::{Duration, Instant};

use clap::Parser as _;
use tasklane::config::ServeConfig;
use tasklane::load::cpu::Backends;
use tasklane::load::fleet::Fleet;
use tasklane::load::stats::{Repeated, Summary};
use tasklane::load::{drain, submit};
use tokio_util::sync::CancellationToken;

const DRAIN_APP: &str = "sweep";
const TRICKLE_APP: &str = "trickle";
const TRICKLE_GAP: Duration = Duration::from_millis(20);
const ROLES: &str = "worker,maintenance";

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What every measurement shares.
struct Setup {
    tasks: i64,
    trickle: u64,
    idle: Duration,
    serve_args: Vec<String>,
    http: reqwest::Client,
}

/// One replica count in one round.
#[derive(Debug, Clone, Default, serde::Serialize)]
struct Figures {
    replicas: usize,
    drain_tasks_per_second: f64,
    drain_sessions_max: f64,
    drain_sessions_mean: f64,
    drain_active_mean: f64,
    drain_claims_per_1000_tasks: f64,
    drain_empty_claims_per_second: f64,
    drain_postgres_ms_per_task: f64,
    wal_bytes_per_task: f64,
    commits_per_1000_tasks: f64,
    pickup_p50_ms: f64,
    pickup_p99_ms: f64,
    trickle_empty_claims_per_task: f64,
    idle_postgres_cores: f64,
    idle_server_cores: f64,
    idle_replica_cores: f64,
    idle_sessions_mean: f64,
    idle_sessions_last: f64,
    idle_empty_claims_per_second: f64,
    idle_transactions_per_second: f64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let bench = common::Bench::start().await?;
    let counts: Vec<usize> = std::env::var("BENCH_REPLICAS")
        .unwrap_or_else(|_| "1,2,4,8".into())
        .split(',')
        .map(|n| n.trim().parse())
        .collect::<Result<_, _>>()?;
    let setup = Setup {
        tasks: env_or("BENCH_TASKS", 50_000),
        trickle: env_or("BENCH_TRICKLE", 200),
        idle: Duration::from_secs(env_or("BENCH_IDLE_SECONDS", 30)),
        serve_args: common::serve_args(),
        http: reqwest::Client::new(),
    };
    let ceiling = connection_ceiling(&setup.serve_args)?;
    println!("machine: {}", common::machine());
    println!("postgres: {}", bench.settings().await?);
    println!(
        "replica flags: --roles {ROLES} {:?}, at most {ceiling} connections a replica \
         (ServeConfig::connections); {} tasks a drain, {} trickle submits {} ms apart, \
         idle {} s",
        setup.serve_args,
        setup.tasks,
        setup.trickle,
        TRICKLE_GAP.as_millis(),
        setup.idle.as_secs()
    );
    let mut all: Vec<Figures> = Vec::new();
    for run in 1..=common::runs() {
        let mut order = counts.clone();
        if run % 2 == 0 {
            order.reverse();
        }
        for &replicas in &order {
            let figures = measure(&bench, &setup, replicas).await?;
            println!("run {run}: {}", serde_json::to_string(&figures)?);
            all.push(figures);
        }
    }
    let rows = table(&counts, &all, ceiling);
    common::write_json(
        "replicas",
        &serde_json::json!({
            "machine": common::machine(),
            "postgres": bench.settings().await?,
            "tasks": setup.tasks,
            "serve_args": setup.serve_args,
            "connection_ceiling_per_replica": ceiling,
            "medians": rows,
            "runs": all,
        }),
    )?;
    bench.stop().await;
    Ok(())
}

/// The most connections one benchmark replica holds, by the documented formula.
fn connection_ceiling(serve_args: &[String]) -> anyhow::Result<usize> {
    #[derive(clap::Parser)]
    struct Flags {
        #[command(flatten)]
        serve: ServeConfig,
    }
    let args = ["replicas", "--roles", ROLES]
        .into_iter()
        .map(str::to_owned)
        .chain(serve_args.iter().cloned());
    Ok(Flags::try_parse_from(args)?.serve.connections().total())
}

/// The three phases for `replicas` on a fresh database.
async fn measure(bench: &common::Bench, setup: &Setup, replicas: usize) -> anyhow::Result<Figures> {
    let (name, url) = bench.fresh_db().await?;
    let mut client = common::connect(&url).await?;
    let mut figures = Figures {
        replicas,
        ..Figures::default()
    };
    drain_phase(bench, setup, &name, &url, &mut client, &mut figures).await?;
    quiet_phase(bench, setup, &name, &url, &client, &mut figures).await?;
    drop(client);
    bench.drop_db(&name).await?;
    Ok(figures)
}

/// A fleet of `replicas` whose `/metrics` the bench can read, and their base URLs.
async fn start_fleet(
    bench: &common::Bench,
    setup: &Setup,
    url: &str,
    replicas: usize,
    client: &tokio_postgres::Client,
) -> anyhow::Result<(Fleet, Vec<String>)> {
    let mut spec = bench.fleet(url, replicas, &setup.serve_args);
    spec.roles = Some(ROLES.into());
    spec.http_base_port = Some(common::free_ports(replicas)?);
    Ok((Fleet::start(&spec, client).await?, spec.http_urls()))
}

async fn drain_phase(
    bench: &common::Bench,
    setup: &Setup,
    db: &str,
    url: &str,
    client: &mut tokio_postgres::Client,
    figures: &mut Figures,
) -> anyhow::Result<()> {
    let (fleet, bases) = start_fleet(bench, setup, url, figures.replicas, client).await?;
    let backlog = drain::queue(client, &fleet, DRAIN_APP, setup.tasks).await?;
    let own = vec![backend_pid(client).await?];
    let sessions = Sessions::sample(bench, db, own, Duration::from_millis(50)).await?;
    let before = Claims::read(&setup.http, &bases).await?;
    let server = server_seconds(client).await?;
    let mut drained = backlog.release(client, &fleet).await?;
    let server = server_seconds(client).await? - server;
    let claims = Claims::read(&setup.http, &bases).await?.since(&before);
    let sessions = sessions.stop().await?;
    fleet.stop();
    let wal = drained.finish_wal(client).await?;
    anyhow::ensure!(
        drained.broken == 0,
        "{} tasks were not worked exactly once",
        drained.broken
    );
    figures.drain_tasks_per_second = drained.tasks_per_second;
    figures.drain_sessions_max = sessions.max;
    figures.drain_sessions_mean = sessions.mean;
    figures.drain_active_mean = sessions.active_mean;
    figures.drain_claims_per_1000_tasks =
        1000.0 * (claims.tasks + claims.empty) / drained.tasks.max(1) as f64;
    figures.drain_empty_claims_per_second = claims.empty / drained.seconds.max(1e-6);
    figures.drain_postgres_ms_per_task = 1000.0 * server / drained.tasks.max(1) as f64;
    figures.wal_bytes_per_task = wal.wal_bytes_per_task;
    figures.commits_per_1000_tasks = wal.commits_per_1000_tasks;
    Ok(())
}

/// The trickle, then the idle stretch, on a new fleet.
async fn quiet_phase(
    bench: &common::Bench,
    setup: &Setup,
    db: &str,
    url: &str,
    client: &tokio_postgres::Client,
    figures: &mut Figures,
) -> anyhow::Result<()> {
    let (fleet, bases) = start_fleet(bench, setup, url, figures.replicas, client).await?;
    let before = Claims::read(&setup.http, &bases).await?;
    let pickup = trickle(url, client, setup.trickle).await?;
    let claims = Claims::read(&setup.http, &bases).await?.since(&before);
    figures.pickup_p50_ms = pickup.p50_ms;
    figures.pickup_p99_ms = pickup.p99_ms;
    figures.trickle_empty_claims_per_task = claims.empty / pickup.count.max(1) as f64;
    // The trickle's own connections leave, its last settles land.
    tokio::time::sleep(Duration::from_secs(2)).await;
    // What the drain left for autovacuum is vacuumed now, so that the idle stretch
    // measures the idle cluster, not a vacuum of the drain that may or may not fall in
    // it (one that did read 0.04 core for the whole server against 0.016 without).
    client.batch_execute("VACUUM (ANALYZE)").await?;

    let own = vec![backend_pid(client).await?];
    let backends = Backends::read(client).await?;
    let server = server_seconds(client).await?;
    let replica_cpu = fleet.total_cpu_seconds();
    let transactions = tasklane::load::store::transactions(client).await?;
    let before = Claims::read(&setup.http, &bases).await?;
    let started = Instant::now();
    let sessions = Sessions::sample(bench, db, own, Duration::from_secs(1)).await?;
    tokio::time::sleep(setup.idle).await;
    let sessions = sessions.stop().await?;
    let claims = Claims::read(&setup.http, &bases).await?.since(&before);
    let transactions = tasklane::load::store::transactions(client).await? - transactions;
    let used = backends.used_until(&Backends::read(client).await?);
    let server = server_seconds(client).await? - server;
    let seconds = started.elapsed().as_secs_f64();
    figures.idle_postgres_cores = used / seconds;
    figures.idle_server_cores = server / seconds;
    figures.idle_replica_cores = (fleet.total_cpu_seconds() - replica_cpu) / seconds;
    figures.idle_sessions_mean = sessions.mean;
    figures.idle_sessions_last = sessions.last;
    figures.idle_empty_claims_per_second = claims.empty / seconds;
    figures.idle_transactions_per_second = transactions as f64 / seconds;
    fleet.stop();
    Ok(())
}

/// `count` single submits `TRICKLE_GAP` apart through a service of the bench's own;
/// pickup of each once all have finished.
async fn trickle(
    url: &str,
    client: &tokio_postgres::Client,
    count: u64,
) -> anyhow::Result<Summary> {
    let pool = tasklane::server::pool(url, 2)?;
    let shutdown = CancellationToken::new();
    let service = submit::service(&pool, &shutdown)?;
    let run = uuid::Uuid::now_v7().simple().to_string();
    let mut accepted = Vec::new();
    let mut next = tokio::time::Instant::now();
    for n in 0..count {
        tokio::time::sleep_until(next).await;
        next += TRICKLE_GAP;
        let request = submit::request(&run, n, "noop", &serde_json::json!({}));
        accepted.push(
            submit::submit(&service, TRICKLE_APP, &request)
                .await
                .map_err(anyhow::Error::msg)?,
        );
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while drain::pending(client, TRICKLE_APP).await? {
        anyhow::ensure!(Instant::now() < deadline, "the trickle did not finish");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    shutdown.cancel();
    pool.close();
    submit::pickup(client, &accepted).await
}

/// CPU seconds the whole PostgreSQL server has used so far (the bench runs beside it).
async fn server_seconds(client: &tokio_postgres::Client) -> anyhow::Result<f64> {
    let pid = backend_pid(client).await?;
    tasklane::load::cpu::server_seconds(pid)
        .ok_or_else(|| anyhow::anyhow!("the server's CPU time is not readable from /proc"))
}

async fn backend_pid(client: &tokio_postgres::Client) -> anyhow::Result<i32> {
    Ok(client
        .query_one("SELECT pg_backend_pid()", &[])
        .await?
        .get(0))
}

/// Claim statements the fleet has run, summed over its replicas' `/metrics`.
#[derive(Debug, Clone, Copy, Default)]
struct Claims {
    tasks: f64,
    empty: f64,
}

impl Claims {
    async fn read(http: &reqwest::Client, bases: &[String]) -> anyhow::Result<Claims> {
        let scrape = common::Scrape::fetch(http, bases).await?;
        let outcome = |o: &str| {
            let label = format!("outcome=\"{o}\"");
            scrape.sum("tasklane_claims_total", |l| l.contains(&label))
        };
        Ok(Claims {
            tasks: outcome("tasks"),
            empty: outcome("empty"),
        })
    }

    fn since(self, before: &Claims) -> Claims {
        Claims {
            tasks: self.tasks - before.tasks,
            empty: self.empty - before.empty,
        }
    }
}

/// The fleet's sessions on one database, sampled from the server's maintenance
/// database (so the sampler is not one of them) until stopped.
struct Sessions {
    stop: CancellationToken,
    samples: tokio::task::JoinHandle<anyhow::Result<Vec<(i64, i64)>>>,
}

/// Sessions held (max, mean, at the last sample) and active in a statement (mean).
struct SessionFigures {
    max: f64,
    mean: f64,
    last: f64,
    active_mean: f64,
}

impl Sessions {
    /// Samples client backends on `db` but `own` (the bench's) every `every`.
    async fn sample(
        bench: &common::Bench,
        db: &str,
        own: Vec<i32>,
        every: Duration,
    ) -> anyhow::Result<Sessions> {
        let admin = common::connect(bench.server.url()).await?;
        let stop = CancellationToken::new();
        let (db, until) = (db.to_owned(), stop.clone());
        let samples = tokio::spawn(async move {
            let mut samples = Vec::new();
            let mut tick = tokio::time::interval(every);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = until.cancelled() => return Ok(samples),
                }
                let row = admin
                    .query_one(
                        "SELECT count(*)::int8, (count(*) FILTER (WHERE state = 'active'))::int8 \
                         FROM pg_stat_activity \
                         WHERE datname = $1 AND backend_type = 'client backend' AND pid <> ALL($2)",
                        &[&db, &own],
                    )
                    .await?;
                samples.push((row.get(0), row.get(1)));
            }
        });
        Ok(Sessions { stop, samples })
    }

    async fn stop(self) -> anyhow::Result<SessionFigures> {
        self.stop.cancel();
        let samples = self.samples.await??;
        let n = samples.len().max(1) as f64;
        Ok(SessionFigures {
            max: samples.iter().map(|s| s.0).max().unwrap_or(0) as f64,
            mean: samples.iter().map(|s| s.0).sum::<i64>() as f64 / n,
            last: samples.last().map_or(0, |s| s.0) as f64,
            active_mean: samples.iter().map(|s| s.1).sum::<i64>() as f64 / n,
        })
    }
}

/// Prints the medians of every count over the rounds, and the goals; returns the rows.
fn table(counts: &[usize], all: &[Figures], ceiling: usize) -> Vec<serde_json::Value> {
    let of = |replicas: usize| all.iter().filter(move |f| f.replicas == replicas);
    let median = |replicas: usize, field: fn(&Figures) -> f64| {
        Repeated::of(of(replicas).map(field).collect(), true).median()
    };
    let one = median(1, |f| f.drain_tasks_per_second);
    println!();
    println!(
        "| replicas | drain tasks/s median (best) | ÷ 1 replica | sessions in drain max / mean \
         (active mean) [ceiling] | claims / 1,000 tasks | empty claims/s drain | PostgreSQL ms/task drain \
         | pickup p50 / p99 ms (worst p99) | empty claims per trickle task | idle PostgreSQL cores \
         backends (server) | idle replica cores \
         | idle sessions mean (last) | idle empty claims/s | idle transactions/s | WAL B/task \
         | commits / 1,000 tasks |"
    );
    println!("|{}", "---|".repeat(16));
    let mut rows = Vec::new();
    for &n in counts {
        let rate = Repeated::of(of(n).map(|f| f.drain_tasks_per_second).collect(), true);
        let worst_p99 = Repeated::of(of(n).map(|f| f.pickup_p99_ms).collect(), false).worst;
        let m = |field: fn(&Figures) -> f64| median(n, field);
        println!(
            "| {n} | {:.0} ({:.0}) | {} | {:.0} / {:.1} ({:.1}) [{}] | {:.1} | {:.1} | {:.3} \
             | {:.2} / {:.2} ({:.2}) | {:.1} | {:.4} ({:.4}) | {:.4} | {:.1} ({:.0}) | {:.1} | {:.1} \
             | {:.0} | {:.1} |",
            rate.median(),
            rate.best,
            if one > 0.0 { format!("{:.2}", rate.median() / one) } else { "-".into() },
            m(|f| f.drain_sessions_max),
            m(|f| f.drain_sessions_mean),
            m(|f| f.drain_active_mean),
            ceiling * n,
            m(|f| f.drain_claims_per_1000_tasks),
            m(|f| f.drain_empty_claims_per_second),
            m(|f| f.drain_postgres_ms_per_task),
            m(|f| f.pickup_p50_ms),
            m(|f| f.pickup_p99_ms),
            worst_p99,
            m(|f| f.trickle_empty_claims_per_task),
            m(|f| f.idle_postgres_cores),
            m(|f| f.idle_server_cores),
            m(|f| f.idle_replica_cores),
            m(|f| f.idle_sessions_mean),
            m(|f| f.idle_sessions_last),
            m(|f| f.idle_empty_claims_per_second),
            m(|f| f.idle_transactions_per_second),
            m(|f| f.wal_bytes_per_task),
            m(|f| f.commits_per_1000_tasks),
        );
        rows.push(serde_json::json!({
            "replicas": n,
            "drain_tasks_per_second": rate,
            "ratio_to_one": if one > 0.0 { rate.median() / one } else { 0.0 },
            "drain_postgres_ms_per_task": m(|f| f.drain_postgres_ms_per_task),
            "idle_postgres_cores": m(|f| f.idle_postgres_cores),
            "idle_server_cores": m(|f| f.idle_server_cores),
            "pickup_p99_ms": m(|f| f.pickup_p99_ms),
        }));
    }
    if counts.contains(&1) && counts.contains(&8) {
        let ratio = median(8, |f| f.drain_tasks_per_second) / one.max(1e-9);
        let idle = median(8, |f| f.idle_server_cores);
        let cpu = median(8, |f| f.drain_postgres_ms_per_task)
            / median(1, |f| f.drain_postgres_ms_per_task).max(1e-9);
        let met = |ok: bool| if ok { "met" } else { "missed" };
        println!();
        println!(
            "goal: 8 replicas drain ≥ 1 replica: {:.2} (median ÷ median): {}",
            ratio,
            met(ratio >= 1.0)
        );
        println!(
            "goal: PostgreSQL CPU a task with 8 replicas ≤ 1.2× with 1: {cpu:.2} (median ÷ median): {}",
            met(cpu <= 1.2)
        );
        println!(
            "goal: idle cluster of 8 ≤ 0.02 PostgreSQL core (the whole server): {idle:.4}: {}",
            met(idle <= 0.02)
        );
    }
    rows
}
