//! The replica registry: registration at start (deciding a cold start), a heartbeat
//! that keeps this replica live, and deregistration on a clean stop.

use std::time::Duration;

use anyhow::Context;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::store::recover::{self, Lost};
use crate::store::replicas::{self, Duties, Sharers};

use super::spread::Spread;

/// Rows a cold start recovers per statement.
const COLD_START_BATCH: i64 = 1000;

pub struct ReplicaRegistry {
    pub pool: crate::store::Pool,
    pub id: Uuid,
    pub name: String,
    /// A replica is presumed dead this long after its last heartbeat.
    pub ttl: Duration,
    /// The roles this replica runs that the others count.
    pub duties: Duties,
    /// Told how many live replicas run the maintenance role, at each heartbeat: the
    /// sweeps' cadence.
    pub sweeps: Spread,
    /// Told how many live replicas run the worker role, at each heartbeat: the idle
    /// claim polls' cadence.
    pub polls: Spread,
}

impl ReplicaRegistry {
    /// Registers this replica. If no other replica is live this is a cold start: the
    /// whole table gets the restart policy, queued rows included, before anything else
    /// runs, exactly as a single-process service would. Returns whether it was one.
    pub async fn register(&self) -> anyhow::Result<bool> {
        let mut object = self.pool.get().await?;
        let client: &mut tokio_postgres::Client = &mut object;
        let tx = client.transaction().await?;
        let registered = replicas::register(
            &tx,
            self.id,
            &self.name,
            self.ttl.as_secs_f64(),
            self.duties,
        )
        .await
        .context("register the replica")?;
        self.share(registered.sharers);
        let other_live = registered.other_live;
        if !other_live {
            let lost = Lost::ColdStart {
                replica_id: self.id,
            };
            let mut recovered = 0;
            loop {
                let n = recover::recover(&tx, &lost, COLD_START_BATCH)
                    .await
                    .context("cold-start recovery")?;
                recovered += n;
                if (n as i64) < COLD_START_BATCH {
                    break;
                }
            }
            tracing::info!(recovered, "cold start: no other replica is live");
        }
        tx.commit().await?;
        Ok(!other_live)
    }

    fn share(&self, sharers: Sharers) {
        self.sweeps.set(sharers.maintainers);
        self.polls.set(sharers.workers);
    }

    /// Heartbeats every ttl/3 until `shutdown`, then deregisters.
    pub async fn run(self, shutdown: CancellationToken) {
        let period = self.ttl / 3;
        super::every(
            "registry",
            || period,
            shutdown.clone(),
            || async {
                let client = self.pool.get().await?;
                let sharers = replicas::heartbeat(
                    crate::store::client(&client),
                    self.id,
                    &self.name,
                    self.ttl.as_secs_f64(),
                    self.duties,
                )
                .await?;
                self.share(sharers);
                Ok(false)
            },
        )
        .await;
        if let Ok(client) = self.pool.get().await {
            if let Err(error) = replicas::deregister(crate::store::client(&client), self.id).await {
                tracing::warn!(%error, "deregister the replica");
            }
        }
    }
}
