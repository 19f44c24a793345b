//! The rescuer: tasks whose lease expired get their restart policy (`task::restart`).

use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;

use crate::service::Wakeup;
use crate::store::clock;
use crate::store::recover::{self, Lost};

use super::start::Start;

/// Rows one pass handles.
const BATCH: i64 = 100;

pub struct Rescuer {
    pub pool: crate::store::Pool,
    pub interval: Duration,
    /// Shares the interval with the other maintaining replicas.
    pub spread: super::spread::Spread,
    pub wakeup: Wakeup,
    pub instruments: crate::telemetry::Instruments,
    /// Where the next pass starts reading the leases: the database's clock at the last
    /// pass that found nothing more, less a margin (`Start::swept`).
    pub start: Start<DateTime<Utc>>,
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

    /// One batch, in its own transaction; true when it was full.
    pub async fn pass(&self) -> anyhow::Result<bool> {
        let from = self.start.next(Instant::now());
        let mut object = self.pool.get().await.context("connection for recovery")?;
        let client: &mut tokio_postgres::Client = &mut object;
        let tx = client.transaction().await?;
        let clock = clock::now(&tx).await?;
        let rescued = recover::recover(&tx, &Lost::Expired { from }, BATCH)
            .await
            .context("recover lost tasks")?;
        tx.commit().await?;
        self.start.swept(clock, rescued, BATCH);
        self.instruments.recovered("expired", rescued as u64);
        if rescued > 0 {
            tracing::info!(rescued, "rescued tasks with expired leases");
            self.wakeup.wake_all();
        }
        Ok(rescued as i64 == BATCH)
    }
}
