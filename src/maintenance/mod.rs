//! Background services every replica runs; each is safe with any number of replicas
//! running it at once (row locks with SKIP LOCKED, or an advisory lock), and the
//! cluster-wide sweeps share their cadence among the replicas ([`spread`]).

pub mod admission_history;
pub mod attempt_deadlines;
pub mod cluster_sampler;
pub mod deadlines;
pub mod floors;
pub mod horizon;
pub mod pruner;
pub mod replicas;
pub mod rescuer;
pub mod sampled_gauges;
pub mod spread;
pub mod start;
pub mod statistics;
pub mod vacuum;

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::service::ServiceError;
use crate::telemetry::outage;

/// Runs `pass` until `shutdown`, waiting `wait()` between passes (a fixed interval, or
/// a cluster-wide one spread over the replicas: [`spread::Spread::wait`]), immediately
/// again while it reports a full batch. Errors are logged here, where they are handled,
/// and the loop goes on: a database that cannot be had once per outage
/// (`telemetry::outage`), any other failure as a warning per pass.
pub(crate) async fn every<F, Fut>(
    name: &'static str,
    wait: impl Fn() -> Duration,
    shutdown: CancellationToken,
    mut pass: F,
) where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    loop {
        let full = match pass().await {
            Ok(full) => {
                outage::answered();
                full
            }
            Err(error) if ServiceError::unavailable(&error) => {
                outage::failed(name, &format!("{error:#}"), None);
                false
            }
            Err(error) => {
                tracing::warn!(service = name, error = %format!("{error:#}"), "maintenance pass failed");
                false
            }
        };
        if full && !shutdown.is_cancelled() {
            continue;
        }
        tokio::select! {
            _ = tokio::time::sleep(wait()) => {}
            _ = shutdown.cancelled() => return,
        }
    }
}
