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
use crate::maintenance::admission_history::{self, AdmissionHistoryPruner};
use crate::maintenance::attempt_deadlines::AttemptDeadlineSweeper;
use crate::maintenance::deadlines::DeadlineSweeper;
use crate::maintenance::pruner::Pruner;
use crate::maintenance::queue_depth::{self, QueueDepthSampler};
use crate::maintenance::replicas::ReplicaRegistry;
use crate::maintenance::rescuer::Rescuer;
use crate::maintenance::statistics::{self, StatisticsKeeper};
use crate::service::{Tasklane, Wakeup};
use crate::store::connect::Database;
use crate::task::catalog::TaskTypes;
use crate::task::task_type::TaskTypesFile;
use crate::task::TaskType;
use crate::telemetry::Telemetry;
use crate::webhooks::{handoff, Deliverer};
use crate::worker::{Handler, Handlers, Worker, WorkerConfig};

/// Builds the connection pool of a replica (TLS as the URL's `sslmode` says).
pub fn pool(database_url: &str, size: usize) -> anyhow::Result<deadpool_postgres::Pool> {
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
/// cannot be read (checked here, at start, not at the first call).
pub fn load_task_types_file(path: &std::path::Path) -> anyhow::Result<Vec<TaskType>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    TaskTypesFile::parse(&text)
        .and_then(|types| {
            crate::worker::executors::check_keys(&types)?;
            Ok(types)
        })
        .with_context(|| format!("task types in {}", path.display()))
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
        // Refused before anything connects, like the types.
        let delivery = config.delivery()?;
        let submit_groups = config.submit_groups()?;
        let task_types = Arc::new(TaskTypes::new(types));
        // Refused whether or not a type calls an upstream: the setting is wrong.
        drop(config.client_options().builder()?);
        let handlers = Arc::new(Handlers::with_options(
            &task_types,
            custom,
            &config.client_options(),
        )?);
        // Bad TLS settings are refused here, before anything connects; without
        // migrations, one connection proves the server and the TLS policy agree.
        let database = Database::from_url(&config.database_url)?;
        if !config.no_migrate {
            crate::store::migrate::run(&config.database_url).await?;
        } else {
            drop(database.connect().await?);
        }
        let pool = database.pool(config.pool_size)?;
        // The SQL door (tasklane.run_task) accepts the types some replica serves.
        {
            let object = pool.get().await?;
            let client: &tokio_postgres::Client = &object;
            let types: Vec<&TaskType> = task_types.iter().collect();
            crate::store::task_types::register(client, &types, config.max_input_bytes)
                .await
                .context("register the task types")?;
        }
        telemetry
            .instruments()
            .declare(task_types.iter().map(|t| t.name.as_str()));
        let id = Uuid::now_v7();
        let wakeup = Wakeup::default();
        // Claims on their own connections, planned generically: one per claim loop
        // (local, and the routed external one beside it) and two for remote workers'.
        // Not behind PgBouncer (`--listen-notify false` is its setting): in transaction
        // mode a session's SET would stay on a server connection other clients share.
        let claims_size = config.claimers.max(1) * 2 + 2;
        let claims = match config.listen_notify {
            true => database.claim_pool(claims_size)?,
            false => database.pool(claims_size)?,
        };
        let tasklane = Tasklane::new(
            pool.clone(),
            task_types,
            wakeup.clone(),
            config.max_input_bytes,
        )
        .with_claim_pool(claims)
        .with_instruments(telemetry.instruments().clone());
        // Group commit of concurrent single submits (service::submit_coalesce).
        let tasklane = match submit_groups {
            0 => tasklane,
            groups => tasklane.with_submit_coalescing(groups),
        };
        // A replica that both works and delivers: its batch settles claim the
        // notifications they write for its own deliverer (webhooks::handoff).
        let (tasklane, inbox) = if config.has(Role::Maintenance) && config.has(Role::Worker) {
            let (handoff, inbox) = handoff::channel(delivery.claim_for, delivery.concurrency);
            (tasklane.with_webhook_handoff(handoff), Some(inbox))
        } else {
            (tasklane, None)
        };
        let pool_gauges = pool_gauges(&telemetry.meter(), &pool, tasklane.claim_pool());
        let shutdown = CancellationToken::new();
        let stop_work = CancellationToken::new();
        let mut services = JoinSet::new();
        let mut workers = JoinSet::new();
        let ttl = Duration::from_secs(config.replica_ttl_seconds);
        let replicas = ReplicaRegistry {
            pool: pool.clone(),
            id,
            name: config.replica_name(),
            ttl,
        };
        let cold_start = replicas.register().await?;
        services.spawn(replicas.run(shutdown.clone()));
        services.spawn(wakeup.clone().run_notifier(
            pool.clone(),
            Duration::from_millis(config.notify_debounce_ms),
            shutdown.clone(),
        ));
        if config.listen_notify && config.has(Role::Worker) {
            services.spawn(
                wakeup
                    .clone()
                    .run_listener(config.database_url.clone(), shutdown.clone()),
            );
        }
        if config.has(Role::Maintenance) {
            let rescuer = Rescuer {
                pool: pool.clone(),
                interval: Duration::from_millis(config.rescue_interval_ms),
                wakeup: wakeup.clone(),
                instruments: telemetry.instruments().clone(),
            };
            services.spawn(rescuer.run(shutdown.clone()));
            let attempt_deadlines = AttemptDeadlineSweeper {
                tasklane: tasklane.clone(),
                interval: Duration::from_millis(config.rescue_interval_ms),
            };
            services.spawn(attempt_deadlines.run(shutdown.clone()));
            let deadlines = DeadlineSweeper {
                pool: pool.clone(),
                interval: Duration::from_millis(config.deadline_interval_ms),
            };
            services.spawn(deadlines.run(shutdown.clone()));
            let pruner = Pruner {
                pool: pool.clone(),
                interval: Duration::from_millis(config.prune_interval_ms),
                batch: config.prune_batch,
                retention: Duration::from_secs(config.retention_seconds),
                instruments: telemetry.instruments().clone(),
            };
            services.spawn(pruner.run(shutdown.clone()));
            let history = AdmissionHistoryPruner {
                pool: pool.clone(),
                interval: admission_history::INTERVAL,
            };
            services.spawn(history.run(shutdown.clone()));
            let keeper = StatisticsKeeper {
                pool: pool.clone(),
                interval: statistics::INTERVAL,
            };
            services.spawn(keeper.run(shutdown.clone()));
            let sampler = QueueDepthSampler::new(
                config.database_url.clone(),
                queue_depth::INTERVAL,
                &telemetry.meter(),
            );
            services.spawn(sampler.run(shutdown.clone()));
            let deliverer = Deliverer::new(
                pool.clone(),
                delivery,
                &telemetry.meter(),
                telemetry.instruments().clone(),
            )?;
            let deliverer = match inbox {
                Some(inbox) => deliverer.with_handoff(inbox),
                None => deliverer,
            };
            services.spawn(deliverer.run(shutdown.clone()));
        }
        if config.has(Role::Worker) {
            for n in 0..config.claimers.max(1) {
                let worker_config = WorkerConfig {
                    worker_id: format!("{}/{n}", config.replica_name()),
                    replica_id: id,
                    route: config.route(),
                    concurrency: config.concurrency.max(1),
                    claim_batch: config.claim_batch as usize,
                    poll_interval: config.poll_interval(),
                    shutdown_grace: Duration::from_secs(config.shutdown_grace_seconds),
                };
                let routed = (worker_config.route == crate::task::Route::Local)
                    .then(|| {
                        Worker::routed_external(
                            worker_config.clone(),
                            tasklane.clone(),
                            handlers.clone(),
                        )
                    })
                    .flatten();
                let worker = Worker::new(worker_config, tasklane.clone(), handlers.clone());
                workers.spawn(worker.run(stop_work.clone()));
                // Fallbacks to the external routes of openai types need no replica
                // configured for the external route: each local one runs their loop.
                if let Some(routed) = routed {
                    workers.spawn(routed.run(stop_work.clone()));
                }
            }
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

/// The database pool's gauges: connections in use and idle, and callers waiting.
struct PoolGauges {
    _connections: opentelemetry::metrics::ObservableGauge<u64>,
    _waiting: opentelemetry::metrics::ObservableGauge<u64>,
}

fn pool_gauges(
    meter: &opentelemetry::metrics::Meter,
    main: &deadpool_postgres::Pool,
    claims: &deadpool_postgres::Pool,
) -> PoolGauges {
    use opentelemetry::KeyValue;
    let pools = [("main", main.clone()), ("claims", claims.clone())];
    let observed = pools.clone();
    let connections = meter
        .u64_observable_gauge("tasklane.db.pool.connections")
        .with_description(
            "Database pool connections, by pool (main, claims) and state (in_use, idle)",
        )
        .with_callback(move |observer| {
            for (name, pool) in &observed {
                let status = pool.status();
                let in_use = status.size.saturating_sub(status.available);
                let pool = KeyValue::new("pool", *name);
                observer.observe(
                    in_use as u64,
                    &[pool.clone(), KeyValue::new("state", "in_use")],
                );
                observer.observe(
                    status.available as u64,
                    &[pool, KeyValue::new("state", "idle")],
                );
            }
        })
        .build();
    let waiting = meter
        .u64_observable_gauge("tasklane.db.pool.waiting")
        .with_description("Callers waiting for a database pool connection, by pool")
        .with_callback(move |observer| {
            for (name, pool) in &pools {
                observer.observe(
                    pool.status().waiting as u64,
                    &[KeyValue::new("pool", *name)],
                );
            }
        })
        .build();
    PoolGauges {
        _connections: connections,
        _waiting: waiting,
    }
}

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
