//! A serving replica: pool, migrations, registration (cold start), wake-ups, workers,
//! maintenance, and the ordered shutdown: stop taking work, let attempts
//! finish within the grace period, hand back the rest, deregister, close the pool.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::config::{Role, ServeConfig};
use crate::maintenance::replicas::ReplicaRegistry;
use crate::maintenance::spread::Spread;
use crate::service::{Tasklane, Wakeup};
use crate::store::connect::sessions::{self, Sessions};
use crate::store::connect::Database;
use crate::store::replicas::Duties;
use crate::task::catalog::TaskTypes;
use crate::task::types_file::TaskTypesFile;
use crate::task::TaskType;
use crate::telemetry::Telemetry;
use crate::webhooks::{handoff, DeliveryConfig};
use crate::worker::{Handler, HandlerRegistry};

mod pool_gauges;
mod roles;

use pool_gauges::{pool_gauges, PoolGauges};

/// Builds the connection pool of a replica (TLS as the URL's `sslmode` says).
pub fn pool(database_url: &str, size: usize) -> anyhow::Result<crate::store::Pool> {
    Database::from_url(database_url)?.pool(size)
}

/// Reads the task-types file named by the configuration (none: no types).
pub fn load_task_types(config: &ServeConfig) -> anyhow::Result<Vec<TaskType>> {
    match &config.task_types {
        None => Ok(Vec::new()),
        Some(path) => load_task_types_file(path),
    }
}

/// Reads and checks a task-types file: every refusal names the file, the type and the
/// field, including a route's API key variable that is not set or key file that
/// cannot be read (checked here, at start, not at the first call), and an output
/// schema file (read relative to the file's directory) that cannot be read or is not
/// a valid JSON Schema.
pub fn load_task_types_file(path: &std::path::Path) -> anyhow::Result<Vec<TaskType>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    let dir = path.parent().unwrap_or(std::path::Path::new(""));
    TaskTypesFile::parse_in(&text, dir, |file| std::fs::read_to_string(file))
        .and_then(|types| {
            crate::worker::executors::check_keys(&types)?;
            Ok(types)
        })
        .with_context(|| format!("task types in {}", path.display()))
}

/// Starts a replica (see [`Replica::start_with_types`]), waiting while its database
/// does not take it for a reason that passes by itself (too many connections, a server
/// starting, in recovery or unreachable): each try that fails so is logged and said to
/// `waiting` (for `/readyz`), and the next comes after a wait that doubles up to 10 s.
/// A refusal that needs a person (a password, a certificate, a bad setting) ends it.
pub async fn start_when_the_database_takes_it(
    config: &ServeConfig,
    types: Vec<TaskType>,
    telemetry: &Telemetry,
    waiting: impl Fn(String),
) -> anyhow::Result<Replica> {
    let mut wait = Duration::from_millis(500);
    loop {
        match Replica::start_with_types(config, types.clone(), Default::default(), telemetry).await
        {
            Ok(replica) => return Ok(replica),
            Err(error) if crate::store::connect::lost::passing(&error) => {
                let why = format!("{error:#}");
                tracing::warn!(error = %why, retry_in_ms = wait.as_millis() as u64, "the database does not take this replica yet; waiting");
                waiting(format!("the database ({why})"));
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(10));
            }
            Err(error) => return Err(error),
        }
    }
}

/// A replica that has started its services.
pub struct Replica {
    pub id: Uuid,
    pub tasklane: Tasklane,
    pub cold_start: bool,
    /// Stops claiming; workers then drain and hand back.
    stop_work: CancellationToken,
    workers: JoinSet<()>,
    /// Stops everything else, once the workers are done.
    shutdown: CancellationToken,
    services: JoinSet<()>,
    /// Kept alive: the pool's gauges report while the replica runs.
    _pool_gauges: PoolGauges,
}

impl Replica {
    /// Starts a replica with `config` and the task types of its file; `custom` adds
    /// in-process handlers; its metrics are recorded into `telemetry`.
    pub async fn start(
        config: &ServeConfig,
        custom: HashMap<String, Arc<dyn Handler>>,
        telemetry: &Telemetry,
    ) -> anyhow::Result<Replica> {
        Replica::start_with_types(config, load_task_types(config)?, custom, telemetry).await
    }

    /// Starts a replica with `config` and the task types `types` (whatever the
    /// configuration's file says). The types and handlers are checked before the
    /// database is migrated, so a bad file is refused before anything is written.
    pub async fn start_with_types(
        config: &ServeConfig,
        types: Vec<TaskType>,
        custom: HashMap<String, Arc<dyn Handler>>,
        telemetry: &Telemetry,
    ) -> anyhow::Result<Replica> {
        let checked = Checked::new(config, types, custom)?;
        let mut database = Database::from_url(&config.database_url)?
            .with_statement_timeout(config.statement_timeout());
        if config.behind_pooler() {
            database = database.behind_transaction_pooler();
        }
        let pool = prepare_database(config, &database, &checked.task_types).await?;
        check_sessions(config).await?;
        telemetry
            .instruments()
            .declare(checked.task_types.iter().map(|t| t.name.as_str()));
        let id = Uuid::now_v7();
        let wakeup = Wakeup::default();
        let (tasklane, inbox) = service(
            config,
            &database,
            pool.clone(),
            &checked,
            &wakeup,
            telemetry,
        )?;
        let pool_gauges = pool_gauges(&telemetry.meter(), &pool, tasklane.claim_pool());
        let shutdown = CancellationToken::new();
        let stop_work = CancellationToken::new();
        let mut services = JoinSet::new();
        let mut workers = JoinSet::new();
        let spread = Spread::default();
        let polls = Spread::default();
        let replicas = ReplicaRegistry {
            pool: pool.clone(),
            id,
            name: config.replica_name(),
            ttl: Duration::from_secs(config.replica_ttl_seconds),
            duties: Duties {
                maintains: config.has(Role::Maintenance),
                works: config.has(Role::Worker),
            },
            sweeps: spread.clone(),
            polls: polls.clone(),
        };
        let cold_start = replicas.register().await?;
        services.spawn(replicas.run(shutdown.clone()));
        for pool in [&pool, tasklane.claim_pool()] {
            let idle = crate::store::connect::IDLE_CLOSE;
            services.spawn(crate::store::connect::close_idle(
                pool.clone(),
                idle,
                shutdown.clone(),
            ));
        }
        services.spawn(wakeup.clone().run_due(shutdown.clone()));
        services.spawn(wakeup.clone().run_notifier(
            pool.clone(),
            Duration::from_millis(config.notify_debounce_ms),
            shutdown.clone(),
        ));
        if config.listen_notify && config.has(Role::Worker) {
            services.spawn(
                wakeup
                    .clone()
                    .run_listener(config.session_url().to_owned(), shutdown.clone()),
            );
        }
        if config.has(Role::Maintenance) {
            let maintenance = roles::Maintenance {
                config,
                tasklane: &tasklane,
                wakeup: &wakeup,
                telemetry,
                spread: &spread,
            };
            maintenance.spawn(&mut services, checked.delivery, inbox, &shutdown)?;
        }
        if config.has(Role::Worker) {
            // Without wake-ups between replicas, a replica's polls are how it hears of
            // the others' submits: each keeps its own interval then.
            let polls = if config.listen_notify {
                polls
            } else {
                Spread::default()
            };
            roles::spawn_workers(
                &mut workers,
                config,
                id,
                &polls,
                &tasklane,
                &checked.handlers,
                &stop_work,
            );
        }
        tracing::info!(replica = %id, cold_start, "replica started");
        Ok(Replica {
            id,
            tasklane,
            cold_start,
            stop_work,
            workers,
            shutdown,
            services,
            _pool_gauges: pool_gauges,
        })
    }

    /// The token that stops the services; the HTTP server watches it too.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// Stops in order: claim loops first (they finish or hand back their attempts), then
    /// the other services (the registry row goes last, so no replica starting meanwhile
    /// mistakes this one's running tasks for a cold start's), then the pool.
    pub async fn stop(mut self) {
        self.stop_work.cancel();
        while self.workers.join_next().await.is_some() {}
        self.shutdown.cancel();
        while self.services.join_next().await.is_some() {}
        self.tasklane.pool().close();
        self.tasklane.claim_pool().close();
        tracing::info!(replica = %self.id, "replica stopped");
    }
}

/// What a replica checks before anything connects: a bad setting or task-types file is
/// refused at start, before the database is touched.
struct Checked {
    delivery: DeliveryConfig,
    submit_groups: usize,
    task_types: Arc<TaskTypes>,
    handlers: Arc<HandlerRegistry>,
}

impl Checked {
    fn new(
        config: &ServeConfig,
        types: Vec<TaskType>,
        custom: HashMap<String, Arc<dyn Handler>>,
    ) -> anyhow::Result<Checked> {
        let delivery = config.delivery()?;
        let submit_groups = config.submit_groups()?;
        let task_types = Arc::new(TaskTypes::new(types));
        let client_options = config.client_options();
        // Refused whether or not a type calls an upstream: the setting is wrong.
        drop(client_options.builder()?);
        let handlers = Arc::new(HandlerRegistry::with_options(
            &task_types,
            custom,
            &client_options,
        )?);
        Ok(Checked {
            delivery,
            submit_groups,
            task_types,
            handlers,
        })
    }
}

/// Migrates (or, without migrations, proves one connection: the server and the TLS
/// policy agree), opens the main pool and registers the task types this replica serves,
/// which the SQL door (`tasklane.queue_task`) accepts.
async fn prepare_database(
    config: &ServeConfig,
    database: &Database,
    task_types: &TaskTypes,
) -> anyhow::Result<crate::store::Pool> {
    if !config.no_migrate {
        crate::store::migrate::run(config.session_url()).await?;
    } else {
        drop(database.connect().await?);
    }
    let pool = database.pool(config.pool_size)?;
    let object = pool.get().await?;
    let client: &tokio_postgres::Client = &object;
    let types: Vec<&TaskType> = task_types.iter().collect();
    crate::store::task_types::register(client, &types, config.max_input_bytes)
        .await
        .context("register the task types")?;
    drop(object);
    Ok(pool)
}

/// Refuses a configuration whose LISTEN would go through a pooler in transaction mode,
/// where it hears nothing: the direct URL must keep its sessions, and without one the
/// database URL must, unless LISTEN is off.
async fn check_sessions(config: &ServeConfig) -> anyhow::Result<()> {
    let (url, fix) = match &config.direct_database_url {
        Some(direct) if !direct.trim().is_empty() => (
            direct.as_str(),
            "--direct-database-url (TASKLANE_DIRECT_DATABASE_URL) reaches PostgreSQL \
             through a pooler in transaction mode too: it must bypass the pooler",
        ),
        _ if !config.listen_notify => return Ok(()),
        _ => (
            config.database_url.as_str(),
            "the database URL reaches PostgreSQL through a pooler in transaction mode \
             (PgBouncer), where LISTEN (wake-ups, task events, live output) hears \
             nothing: set --direct-database-url (TASKLANE_DIRECT_DATABASE_URL) to a URL \
             that bypasses the pooler, or --listen-notify false (TASKLANE_LISTEN_NOTIFY) \
             to poll instead",
        ),
    };
    let database = Database::from_url(url)?;
    match sessions::probe(&database).await? {
        Sessions::Kept => Ok(()),
        Sessions::Shared => anyhow::bail!("{fix}"),
    }
}

/// The service of this replica, and the inbox of its webhook hand-off when it both works
/// and delivers.
fn service(
    config: &ServeConfig,
    database: &Database,
    pool: crate::store::Pool,
    checked: &Checked,
    wakeup: &Wakeup,
    telemetry: &Telemetry,
) -> anyhow::Result<(Tasklane, Option<handoff::Inbox>)> {
    // Claims on their own connections, planned generically: one per claim loop
    // (local, and the routed external one beside it) and two for remote workers'.
    // Behind a pooler each claim makes those settings in its own transaction (see
    // `store::claim`).
    let claims_size = config.claim_pool_size();
    let claims = database.claim_pool(claims_size)?;
    let tasklane = Tasklane::new(
        pool,
        checked.task_types.clone(),
        wakeup.clone(),
        config.max_input_bytes,
    )
    .with_claim_pool(claims)
    .with_instruments(telemetry.instruments().clone());
    // Group commit of concurrent single submits (service::submit_coalesce).
    let tasklane = match checked.submit_groups {
        0 => tasklane,
        groups => tasklane.with_submit_coalescing(groups),
    };
    // The token lookups of concurrent requests read together (service::token_lookups).
    let tasklane = tasklane.with_token_gathering(TOKEN_READERS.min(config.pool_size));
    // Only a replica that runs attempts, or takes remote workers' output, has live
    // output to publish.
    let tasklane = match config.has(Role::Worker) || config.has(Role::Api) {
        true => tasklane.with_live_output(),
        false => tasklane,
    };
    // A replica that both works and delivers: its batch completes claim the
    // notifications they write for its own deliverer (webhooks::handoff).
    Ok(
        if config.has(Role::Maintenance) && config.has(Role::Worker) {
            let delivery = &checked.delivery;
            let (handoff, inbox) = handoff::channel(delivery.claim_for, delivery.concurrency);
            (tasklane.with_webhook_handoff(handoff), Some(inbox))
        } else {
            (tasklane, None)
        },
    )
}

/// Token lookups a replica reads at once, each a group of the lookups that queued
/// while the others were read: as with submit groups, a couple keep a lookup from
/// waiting long for a reader, and more would only split the groups.
const TOKEN_READERS: usize = 2;

/// Resolves on SIGTERM or Ctrl-C.
pub async fn terminated() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("install the SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
