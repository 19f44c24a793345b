//! `tasklane load`: start (or target) replicas, submit tasks with C concurrent clients
//! at a fixed rate or flat out, wait until they are worked off, and report submits/s,
//! completions/s, submit/pickup/end-to-end latency, errors by code and replica memory.
//!
//! Submits are open-loop when a rate is given (each one is scheduled at `n / rate`
//! regardless of how long earlier ones took), so a slow server shows up as latency
//! rather than as a politely lower rate.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use super::cpu::Backends;
use super::fleet::{self, Fleet, FleetSpec};
use super::http_submit::HttpSubmitter;
use super::report::Report;
use super::stats::Summary;
use super::submit::{self, Accepted};
use crate::service::Tasklane;

/// Flags of `tasklane load`.
#[derive(Debug, Clone, clap::Args)]
pub struct LoadConfig {
    /// The database the replicas use (the load reads timings from it too).
    #[arg(
        long,
        env = "DATABASE_URL",
        hide_env_values = true,
        default_value = "postgres://postgres@127.0.0.1:5432/postgres"
    )]
    pub database_url: String,
    /// Replicas to start (`tasklane serve` processes); 0 drives replicas already running.
    #[arg(long, default_value_t = 1)]
    pub replicas: usize,
    /// The `tasklane` binary replicas run; defaults to this one.
    #[arg(long)]
    pub bin: Option<PathBuf>,
    /// A flag for every started replica, repeatable: `--serve-arg=--concurrency=256`.
    #[arg(long = "serve-arg", allow_hyphen_values = true)]
    pub serve_args: Vec<String>,
    /// Tasks to submit.
    #[arg(long, default_value_t = 10_000)]
    pub tasks: u64,
    /// Submits per second across all clients; 0 submits flat out.
    #[arg(long, default_value_t = 0.0)]
    pub rate: f64,
    /// Concurrent submitting clients.
    #[arg(long, default_value_t = 16)]
    pub clients: usize,
    /// `noop` or `sleep`.
    #[arg(long, default_value = "noop")]
    pub task_type: String,
    /// For `sleep` tasks: how long each sleeps, in ms.
    #[arg(long, default_value_t = 100)]
    pub sleep_ms: u64,
    /// `sql` (the Rust API, one transaction per submit) or `http` (`POST /v1/tasks`).
    #[arg(long, default_value = "sql")]
    pub submit: String,
    /// Replica base URLs for `--submit http`, comma separated; by default the started
    /// replicas' (see `--http-base-port`).
    #[arg(long, value_delimiter = ',')]
    pub http_url: Vec<String>,
    /// With `--submit http`, started replicas serve the API on 127.0.0.1:(port + n).
    #[arg(long, default_value_t = 18080)]
    pub http_base_port: u16,
    /// API token with the `submit` permission for `--submit http`.
    #[arg(long, env = "TASKLANE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// The app the tasks belong to (the SQL path; HTTP takes the token's).
    #[arg(long, default_value = "load")]
    pub app: String,
    /// Also write the report as JSON here (`-` for stdout).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Give up waiting for completions after this long.
    #[arg(long, default_value_t = 300)]
    pub timeout_seconds: u64,
    /// Skip migrations (another process ran them).
    #[arg(long)]
    pub no_migrate: bool,
}

enum Path {
    // Boxed: the service handle is several times the size of the HTTP submitter.
    Sql(Box<Tasklane>),
    Http(HttpSubmitter),
}

/// Runs the load and returns its report (also printed as a table, and JSON if asked).
pub async fn run(config: LoadConfig) -> anyhow::Result<Report> {
    if !config.no_migrate {
        crate::store::migrate::run(&config.database_url).await?;
    }
    let pool = crate::server::pool(&config.database_url, config.clients + 4)?;
    let shutdown = CancellationToken::new();
    let types_file = fleet::write_task_types(&std::env::temp_dir())?;
    let reader = pool.get().await.context("connect")?;
    let spec = FleetSpec {
        bin: match &config.bin {
            Some(bin) => bin.clone(),
            None => std::env::current_exe()?,
        },
        database_url: config.database_url.clone(),
        task_types: types_file.clone(),
        replicas: config.replicas,
        serve_args: config.serve_args.clone(),
        http_base_port: (config.submit == "http").then_some(config.http_base_port),
        roles: None,
    };
    let fleet = match config.replicas {
        0 => None,
        _ => Some(Fleet::start(&spec, &reader).await?),
    };
    let mut config = config;
    if config.http_url.is_empty() {
        config.http_url = spec.http_urls();
    }
    let path = submit_path(&config, &pool, &shutdown)?;
    let idle_memory = fleet.as_ref().map(Fleet::memory).unwrap_or_default();
    let run_id = uuid::Uuid::now_v7().simple().to_string();
    let input = match config.task_type.as_str() {
        "sleep" => serde_json::json!({"ms": config.sleep_ms}),
        _ => serde_json::json!({}),
    };

    let replica_cpu_before = fleet.as_ref().map(Fleet::total_cpu_seconds);
    let backends_before = Backends::read(&reader).await?;
    let load_cpu_before = fleet::cpu_seconds(std::process::id()).unwrap_or(0.0);
    let started = Instant::now();
    let progress = tokio::spawn(progress_line(
        config.database_url.clone(),
        config.app.clone(),
        started,
        shutdown.clone(),
    ));
    let outcomes = submit_all(&config, Arc::new(path), &run_id, &input).await;
    let submit_seconds = started.elapsed().as_secs_f64();
    let mut report = Report {
        task_type: config.task_type.clone(),
        submit_path: config.submit.clone(),
        clients: config.clients,
        target_rate: config.rate,
        replicas: config.replicas,
        submitted: config.tasks,
        idle_memory,
        ..Report::default()
    };
    let mut accepted = Vec::new();
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    for outcome in outcomes {
        match outcome {
            Ok(a) => accepted.push(a),
            Err(code) => *errors.entry(code).or_default() += 1,
        }
    }
    report.accepted = accepted.len() as u64;
    report.errors = errors;
    report.submits_per_second = accepted.len() as f64 / submit_seconds.max(1e-6);
    report.submit_latency = Summary::of(&accepted.iter().map(|a| a.latency).collect::<Vec<_>>());
    wait_finished(
        &reader,
        &accepted,
        Duration::from_secs(config.timeout_seconds),
    )
    .await?;
    let tasks = report.accepted.max(1) as f64;
    let backends_after = Backends::read(&reader).await?;
    if !backends_after.is_empty() {
        report.postgres_cpu_ms_per_task =
            Some(backends_before.used_until(&backends_after) * 1000.0 / tasks);
    }
    report.replica_cpu_ms_per_task = fleet
        .as_ref()
        .zip(replica_cpu_before)
        .map(|(f, before)| (f.total_cpu_seconds() - before) * 1000.0 / tasks);
    report.load_cpu_ms_per_task =
        (fleet::cpu_seconds(std::process::id()).unwrap_or(0.0) - load_cpu_before) * 1000.0 / tasks;
    shutdown.cancel();
    let _ = progress.await;
    eprintln!();
    timings(&reader, &accepted, &mut report).await?;
    report.peak_memory = fleet.as_ref().map(Fleet::memory).unwrap_or_default();
    drop(reader);
    if let Some(fleet) = fleet {
        fleet.stop();
    }
    let _ = std::fs::remove_file(&types_file);
    print!("{}", report.table());
    if let Some(json) = &config.json {
        let text = serde_json::to_string_pretty(&report)?;
        if json.as_os_str() == "-" {
            println!("{text}");
        } else {
            std::fs::write(json, text).with_context(|| format!("write {}", json.display()))?;
        }
    }
    Ok(report)
}

fn submit_path(
    config: &LoadConfig,
    pool: &crate::store::Pool,
    shutdown: &CancellationToken,
) -> anyhow::Result<Path> {
    match config.submit.as_str() {
        "sql" => Ok(Path::Sql(Box::new(submit::service(pool, shutdown)?))),
        "http" => {
            let token = config
                .token
                .clone()
                .context("--submit http needs --token (or TASKLANE_TOKEN)")?;
            Ok(Path::Http(HttpSubmitter::new(
                config.http_url.clone(),
                token,
            )?))
        }
        other => anyhow::bail!("--submit is sql or http, not {other:?}"),
    }
}

/// Submits `config.tasks` tasks with `config.clients` clients; one outcome per task.
async fn submit_all(
    config: &LoadConfig,
    path: Arc<Path>,
    run_id: &str,
    input: &serde_json::Value,
) -> Vec<Result<Accepted, String>> {
    let next = Arc::new(AtomicU64::new(0));
    let t0 = tokio::time::Instant::now();
    let mut clients = tokio::task::JoinSet::new();
    for _ in 0..config.clients.max(1) {
        let (next, path, run_id, input) =
            (next.clone(), path.clone(), run_id.to_owned(), input.clone());
        let (total, rate, app, task_type) = (
            config.tasks,
            config.rate,
            config.app.clone(),
            config.task_type.clone(),
        );
        clients.spawn(async move {
            let mut outcomes = Vec::new();
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= total {
                    return outcomes;
                }
                if rate > 0.0 {
                    tokio::time::sleep_until(t0 + Duration::from_secs_f64(n as f64 / rate)).await;
                }
                let request = submit::request(&run_id, n, &task_type, &input);
                outcomes.push(match path.as_ref() {
                    Path::Sql(tasklane) => submit::submit(tasklane, &app, &request).await,
                    Path::Http(http) => http.submit(&request).await,
                });
            }
        });
    }
    let mut all = Vec::new();
    while let Some(outcomes) = clients.join_next().await {
        all.extend(outcomes.unwrap_or_default());
    }
    all
}

/// Waits until every accepted task is finished (or `timeout`).
async fn wait_finished(
    client: &tokio_postgres::Client,
    accepted: &[Accepted],
    timeout: Duration,
) -> anyhow::Result<()> {
    let ids: Vec<uuid::Uuid> = accepted.iter().map(|a| a.id).collect();
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        let open = super::store::open_count(client, &ids).await?;
        if open == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

/// Pickup and end-to-end latency of every accepted task, from the database's record.
async fn timings(
    client: &tokio_postgres::Client,
    accepted: &[Accepted],
    report: &mut Report,
) -> anyhow::Result<()> {
    let committed: std::collections::HashMap<uuid::Uuid, &Accepted> =
        accepted.iter().map(|a| (a.id, a)).collect();
    let (mut pickup, mut e2e) = (Vec::new(), Vec::new());
    let (mut first_commit, mut last_finish): (Option<SystemTime>, Option<SystemTime>) =
        (None, None);
    for chunk in accepted.chunks(10_000) {
        let ids: Vec<uuid::Uuid> = chunk.iter().map(|a| a.id).collect();
        for timing in super::store::timings(client, &ids).await? {
            let accepted = &committed[&timing.id];
            let commit = accepted.committed_at;
            first_commit = Some(first_commit.map_or(commit, |f| f.min(commit)));
            if let Some(at) = timing.running_at {
                pickup.push(accepted.since_commit(at));
            }
            match timing.finished_at {
                Some(at) => {
                    e2e.push(accepted.since_commit(at));
                    last_finish = Some(last_finish.map_or(at.into(), |l| l.max(at.into())));
                    report.completed += 1;
                }
                None => report.unfinished += 1,
            }
        }
    }
    let ids: Vec<uuid::Uuid> = accepted.iter().map(|a| a.id).collect();
    report.failed = super::store::failed_count(client, &ids).await? as u64;
    if let (Some(first), Some(last)) = (first_commit, last_finish) {
        let seconds = last.duration_since(first).unwrap_or_default().as_secs_f64();
        report.completed_per_second = report.completed as f64 / seconds.max(1e-6);
    }
    report.pickup_latency = Summary::of(&pickup);
    report.end_to_end_latency = Summary::of(&e2e);
    Ok(())
}

/// One status line on stderr per second until `shutdown`.
async fn progress_line(
    database_url: String,
    app: String,
    started: Instant,
    shutdown: CancellationToken,
) {
    let Ok(client) = crate::store::connect::connect(&database_url).await else {
        return;
    };
    let mut last = (0i64, 0i64);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = shutdown.cancelled() => return,
        }
        let Ok((finished, failed, total, _)) = super::drain::progress(&client, &app).await else {
            continue;
        };
        eprint!(
            "\r[{:>6.1} s] in table {total:>8} (+{}/s)  finished {finished:>8} (+{}/s)  failed {failed}   ",
            started.elapsed().as_secs_f64(),
            total - last.0,
            finished - last.1
        );
        last = (total, finished);
    }
}
