//! The rescuer: tasks whose lease expired get their restart policy (`task::restart`).

use std::time::Duration;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use crate::service::Wakeup;
use crate::store::recover::{self, Lost};

/// Rows one pass handles.
const BATCH: i64 = 100;

pub struct Rescuer {
    pub pool: crate::store::Pool,
    pub interval: Duration,
    /// Shares the interval with the other maintaining replicas.
    pub spread: super::spread::Spread,
    pub wakeup: Wakeup,
    pub instruments: crate::telemetry::Instruments,
}

impl Rescuer {
    pub async fn run(self, shutdown: CancellationToken) {
        super::every(
            "rescuer",
            || self.spread.wait(self.interval),
            shutdown,
            || self.pass(),
        )
        .await
    }

    /// One batch; true when it was full.
    pub async fn pass(&self) -> anyhow::Result<bool> {
        let rescued = rescue(&self.pool, &Lost::Expired, BATCH).await?;
        self.instruments.recovered("expired", rescued as u64);
        if rescued > 0 {
            tracing::info!(rescued, "rescued tasks with expired leases");
            self.wakeup.wake_all();
        }
        Ok(rescued as i64 == BATCH)
    }
}

/// Recovers one batch of `lost` in its own transaction; returns how many tasks it moved.
pub async fn rescue(
    pool: &crate::store::Pool,
    lost: &Lost<'_>,
    limit: i64,
) -> anyhow::Result<usize> {
    let mut object = pool.get().await.context("connection for recovery")?;
    let client: &mut tokio_postgres::Client = &mut object;
    let tx = client.transaction().await?;
    let moved = recover::recover(&tx, lost, limit)
        .await
        .context("recover lost tasks")?;
    tx.commit().await?;
    Ok(moved)
}
