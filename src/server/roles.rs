//! What each role of a replica runs beside the HTTP server: the maintenance role's
//! sweeps, sampler and webhook deliverer, and the worker role's claim loops.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::config::ServeConfig;
use crate::maintenance::admission_history::{self, AdmissionHistoryPruner};
use crate::maintenance::attempt_deadlines::AttemptDeadlineSweeper;
use crate::maintenance::cluster_sampler::{self, ClusterSampler};
use crate::maintenance::deadlines::DeadlineSweeper;
use crate::maintenance::floors::{self, FloorKeeper};
use crate::maintenance::pruner::Pruner;
use crate::maintenance::rescuer::Rescuer;
use crate::maintenance::spread::Spread;
use crate::maintenance::statistics::{self, StatisticsKeeper};
use crate::maintenance::vacuum::{self, VacuumKeeper};
use crate::service::{Tasklane, Wakeup};
use crate::telemetry::Telemetry;
use crate::webhooks::{handoff, Deliverer, DeliveryConfig};
use crate::worker::completer::{self, Completer};
use crate::worker::{HandlerRegistry, Worker, WorkerConfig};

/// The maintenance role: every loop runs on every such replica, each safe to run
/// concurrently with its twins elsewhere (row locks, or one elected sampler); the
/// cluster-wide sweeps share their cadence among them (`maintenance::spread`).
pub(super) struct Maintenance<'a> {
    pub config: &'a ServeConfig,
    pub tasklane: &'a Tasklane,
    pub wakeup: &'a Wakeup,
    pub telemetry: &'a Telemetry,
    /// The count of maintaining replicas the registry keeps (the sweeps' cadence).
    pub spread: &'a Spread,
}

impl Maintenance<'_> {
    /// Spawns the sweeps and the deliverer into `services`; `inbox` takes the
    /// notifications this replica's own batch completes hand over.
    pub fn spawn(
        self,
        services: &mut JoinSet<()>,
        delivery: DeliveryConfig,
        inbox: Option<handoff::Inbox>,
        shutdown: &CancellationToken,
    ) -> anyhow::Result<()> {
        let Maintenance {
            config,
            tasklane,
            wakeup,
            telemetry,
            spread,
        } = self;
        let pool = tasklane.pool();
        let rescuer = Rescuer {
            pool: pool.clone(),
            interval: Duration::from_millis(config.rescue_interval_ms),
            spread: spread.clone(),
            wakeup: wakeup.clone(),
            instruments: telemetry.instruments().clone(),
            start: Default::default(),
        };
        services.spawn(rescuer.run(shutdown.clone()));
        let attempt_deadlines = AttemptDeadlineSweeper {
            tasklane: tasklane.clone(),
            interval: Duration::from_millis(config.rescue_interval_ms),
            spread: spread.clone(),
            start: Default::default(),
        };
        services.spawn(attempt_deadlines.run(shutdown.clone()));
        let deadlines = DeadlineSweeper {
            pool: pool.clone(),
            interval: Duration::from_millis(config.deadline_interval_ms),
            spread: spread.clone(),
            start: Default::default(),
        };
        services.spawn(deadlines.run(shutdown.clone()));
        let pruner = Pruner {
            pool: pool.clone(),
            interval: Duration::from_millis(config.prune_interval_ms),
            spread: spread.clone(),
            batch: config.prune_batch,
            retention: Duration::from_secs(config.retention_seconds),
            instruments: telemetry.instruments().clone(),
            start: Default::default(),
            deliveries_start: Default::default(),
        };
        services.spawn(pruner.run(shutdown.clone()));
        let history = AdmissionHistoryPruner {
            pool: pool.clone(),
            interval: admission_history::INTERVAL,
            spread: spread.clone(),
        };
        services.spawn(history.run(shutdown.clone()));
        let keeper = StatisticsKeeper {
            pool: pool.clone(),
            interval: statistics::INTERVAL,
            spread: spread.clone(),
        };
        services.spawn(keeper.run(shutdown.clone()));
        let vacuum = VacuumKeeper {
            pool: pool.clone(),
            interval: vacuum::INTERVAL,
            spread: spread.clone(),
        };
        services.spawn(vacuum.run(shutdown.clone()));
        let floors = FloorKeeper {
            pool: pool.clone(),
            interval: floors::INTERVAL,
            idle_interval: floors::IDLE_INTERVAL,
            spread: spread.clone(),
            earlier: Vec::new(),
        };
        services.spawn(floors.run(shutdown.clone()));
        let sampler = ClusterSampler::new(
            config.session_url().to_owned(),
            cluster_sampler::INTERVAL,
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
        }
        .with_spread(spread.clone());
        services.spawn(deliverer.run(shutdown.clone()));
        Ok(())
    }
}

/// The worker role: `claimers` claim loops on the configured locality; a local replica also
/// runs one external loop for `openai` types, so their fallbacks need no replica
/// configured for the external locality. `polls` counts the replicas sharing the idle
/// polls.
pub(super) fn spawn_workers(
    workers: &mut JoinSet<()>,
    config: &ServeConfig,
    replica_id: Uuid,
    polls: &Spread,
    tasklane: &Tasklane,
    handlers: &Arc<HandlerRegistry>,
    stop_work: &CancellationToken,
) {
    // One group commit for the replica's loops.
    let completer = Completer::start(
        tasklane.clone(),
        completer::DEFAULT_MAX_BATCH,
        completer::DEFAULT_MAX_IN_FLIGHT,
    );
    for n in 0..config.claimers.max(1) {
        let worker_config = WorkerConfig {
            worker_id: format!("{}/{n}", config.replica_name()),
            replica_id,
            locality: config.locality(),
            concurrency: config.concurrency.max(1),
            claim_batch: config.claim_batch as usize,
            poll_interval: config.poll_interval(),
            polls: polls.clone(),
            shutdown_grace: Duration::from_secs(config.shutdown_grace_seconds),
        };
        // One external loop a replica, beside its first local loop: its `--concurrency`
        // slots serve the openai types' fallbacks and external-only types, and a loop
        // per claimer would only multiply its idle polls.
        let routed = (n == 0 && worker_config.locality == crate::task::Locality::Local)
            .then(|| {
                Worker::routed_external(worker_config.clone(), tasklane.clone(), handlers.clone())
            })
            .flatten();
        let worker = Worker::new(worker_config, tasklane.clone(), handlers.clone())
            .settling_through(completer.clone());
        workers.spawn(worker.run(stop_work.clone()));
        if let Some(routed) = routed {
            workers.spawn(
                routed
                    .settling_through(completer.clone())
                    .run(stop_work.clone()),
            );
        }
    }
}
