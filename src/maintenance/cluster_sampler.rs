//! The cluster's sampled gauges (`sampled_gauges`: queue depth by task type and state,
//! the oldest claimable task's age by type, live replicas, emergency stops, circuits not
//! closed, the oldest holder of the vacuum horizon's age). One replica of the cluster samples at a time: each maintenance replica keeps
//! one connection and tries to win a session advisory lock on it; the winner queries
//! every interval and reports the sample, the others report only that they are not the
//! sampler. When the winner dies its session and lock go with it, and another replica
//! takes over at its next try.

use std::time::Duration;

use opentelemetry::metrics::Meter;
use tokio_util::sync::CancellationToken;

use super::horizon::HorizonAges;
use super::sampled_gauges::{self, Gauges, Sample, Shared};
use crate::store::{health_sample, queue_depth};

/// How often the sampler queries (and a non-sampler tries to become one).
pub const INTERVAL: Duration = Duration::from_secs(15);

pub struct ClusterSampler {
    pub database_url: String,
    pub interval: Duration,
    sample: Shared,
    horizon: std::sync::Mutex<HorizonAges>,
    _gauges: Gauges,
}

impl ClusterSampler {
    /// A sampler reporting through `meter`.
    pub fn new(database_url: String, interval: Duration, meter: &Meter) -> Self {
        let sample = Shared::default();
        let gauges = sampled_gauges::register(meter, &sample);
        ClusterSampler {
            database_url,
            interval,
            sample,
            horizon: Default::default(),
            _gauges: gauges,
        }
    }

    pub async fn run(self, shutdown: CancellationToken) {
        let mut session = None;
        let mut failing = false;
        loop {
            match self.pass(&mut session).await {
                Ok(()) => failing = false,
                Err(error) => {
                    // Said once per failure streak, not every interval.
                    if !failing {
                        tracing::warn!(error = %format!("{error:#}"), "cluster gauges sample");
                    }
                    failing = true;
                    session = None;
                    *self.sample.lock().expect("cluster sample lock") = Sample::default();
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(self.interval) => {}
                _ = shutdown.cancelled() => return,
            }
        }
    }

    /// Samples if this replica is (or now becomes) the sampler.
    async fn pass(
        &self,
        session: &mut Option<(tokio_postgres::Client, bool)>,
    ) -> anyhow::Result<()> {
        if session.is_none() {
            *session = Some((queue_depth::connect(&self.database_url).await?, false));
        }
        let (client, elected) = session.as_mut().expect("a session was just opened");
        if !*elected {
            *elected = queue_depth::elect(client).await?;
        }
        if *elected {
            let holders = health_sample::snapshot_holders(client).await?;
            let oldest_snapshot = self
                .horizon
                .lock()
                .expect("horizon ages lock")
                .oldest(&holders, std::time::Instant::now());
            let sample = Sample {
                elected: true,
                depth: queue_depth::depth(client).await?,
                oldest: queue_depth::oldest_age(client).await?,
                health: Some(health_sample::health(client).await?),
                circuits: health_sample::open_circuits(client).await?,
                oldest_snapshot: Some(oldest_snapshot),
            };
            *self.sample.lock().expect("cluster sample lock") = sample;
        }
        Ok(())
    }
}
