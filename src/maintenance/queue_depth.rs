//! The queue-depth gauge (`tasklane.queue.depth` by task type and state). One replica
//! of the cluster samples at a time: each maintenance replica keeps one connection and
//! tries to win a session advisory lock on it; the winner queries every interval and
//! reports the sample, the others report nothing. When the winner dies its session and
//! lock go with it, and another replica takes over at its next try.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry::metrics::{Meter, ObservableGauge};
use opentelemetry::KeyValue;
use tokio_util::sync::CancellationToken;

use crate::store::queue_depth::{self, Depth};

/// How often the sampler queries (and a non-sampler tries to become one).
pub const INTERVAL: Duration = Duration::from_secs(15);

pub struct QueueDepthSampler {
    pub database_url: String,
    pub interval: Duration,
    sample: Arc<Mutex<Vec<Depth>>>,
    _gauge: ObservableGauge<u64>,
}

impl QueueDepthSampler {
    /// A sampler reporting through `meter`.
    pub fn new(database_url: String, interval: Duration, meter: &Meter) -> Self {
        let sample: Arc<Mutex<Vec<Depth>>> = Arc::default();
        let reported = sample.clone();
        let gauge = meter
            .u64_observable_gauge("tasklane.queue.depth")
            .with_description(
                "Non-terminal tasks by task type and state (reported by one replica of the cluster)",
            )
            .with_callback(move |observer| {
                for depth in reported.lock().expect("queue sample lock").iter() {
                    observer.observe(
                        depth.count.max(0) as u64,
                        &[
                            KeyValue::new("task_type", depth.task_type.clone()),
                            KeyValue::new("state", depth.state.clone()),
                        ],
                    );
                }
            })
            .build();
        QueueDepthSampler {
            database_url,
            interval,
            sample,
            _gauge: gauge,
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
                        tracing::warn!(error = %format!("{error:#}"), "queue depth sample");
                    }
                    failing = true;
                    session = None;
                    self.sample.lock().expect("queue sample lock").clear();
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
            let depth = queue_depth::depth(client).await?;
            *self.sample.lock().expect("queue sample lock") = depth;
        }
        Ok(())
    }
}
