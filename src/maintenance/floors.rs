//! Raises the claims' floors (see `store::turn_floors`) to where the claims have got, so
//! a claim never walks the index entries of the tasks claimed before the last raise:
//! vacuum removes them within seconds, but not while a snapshot older than them is
//! open, and then every claim would read them all. Each pass reads where the claims
//! have got and which writers of claimable rows are in flight, and raises the floors to
//! the points of its previous reading, whose writers have all finished since: a raise
//! waits for no writer and blocks none. Safe on every replica at once (an advisory
//! try-lock per floor).

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::store::turn_floors;

/// How often the cluster raises while the claims move (spread over the maintaining
/// replicas, like the idle looks): a claim reads the dead entries of the tasks claimed
/// since the last raise, so at 1,000 claimed tasks a second about 100 at most.
pub const INTERVAL: Duration = Duration::from_millis(100);

/// How often the cluster looks while nothing moved at the last look: spread over the
/// maintaining replicas, an idle cluster pays one query a second.
pub const IDLE_INTERVAL: Duration = Duration::from_secs(1);

pub struct FloorKeeper {
    pub pool: crate::store::Pool,
    pub interval: Duration,
    pub idle_interval: Duration,
    /// Shares both intervals with the other maintaining replicas.
    pub spread: super::spread::Spread,
    /// The floors as the previous pass read them.
    pub earlier: Vec<turn_floors::Reading>,
}

impl FloorKeeper {
    pub async fn run(mut self, shutdown: CancellationToken) {
        loop {
            let pause = match self.pass().await {
                Ok(true) => self.spread.wait(self.interval),
                Ok(false) => self.spread.wait(self.idle_interval),
                Err(error) => {
                    tracing::warn!(service = "floors", error = %format!("{error:#}"), "maintenance pass failed");
                    self.spread.wait(self.idle_interval)
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = shutdown.cancelled() => return,
            }
        }
    }

    /// One reading, and the raise of the floors the previous one made ready; whether a
    /// floor rose or is below its point.
    pub async fn pass(&mut self) -> anyhow::Result<bool> {
        let mut object = self.pool.get().await?;
        let client: &mut tokio_postgres::Client = &mut object;
        let now = turn_floors::read(client).await?;
        let targets = turn_floors::ready(&self.earlier, &now);
        let moving = now.iter().any(|r| r.point > r.floor);
        self.earlier = now;
        let raised = turn_floors::raise(client, &targets).await?;
        if raised.behind > 0 {
            tracing::debug!(
                floors = raised.floors,
                behind = raised.behind,
                "raised the claims' floors past tasks left waiting"
            );
        }
        Ok(raised.floors > 0 || moving)
    }
}
