//! Background services every replica runs; each is safe with any number of replicas
//! running it at once (row locks with SKIP LOCKED, or an advisory lock).

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
pub mod statistics;
pub mod vacuum;

use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// Runs `pass` every `interval` until `shutdown`, immediately again while it reports a
/// full batch. Errors are logged here, where they are handled, and the loop goes on.
pub(crate) async fn every<F, Fut>(
    name: &'static str,
    interval: Duration,
    shutdown: CancellationToken,
    mut pass: F,
) where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    loop {
        let full = match pass().await {
            Ok(full) => full,
            Err(error) => {
                tracing::warn!(service = name, error = %format!("{error:#}"), "maintenance pass failed");
                false
            }
        };
        if full && !shutdown.is_cancelled() {
            continue;
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = shutdown.cancelled() => return,
        }
    }
}
