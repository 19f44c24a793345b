//! A primary with one synchronous streaming standby, both private clusters, and the
//! failover an HA manager makes between them: the primary dies, the standby is promoted
//! and stops waiting for a standby of its own. For tests and benchmarks of what
//! replicas do when their database moves to another host.
//!
//! `synchronous_standby_names` is set with `ALTER SYSTEM` before the standby is copied,
//! so the standby inherits it as a copy of a real primary would: once promoted it would
//! wait for a standby that does not exist, which is why the failover clears it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::{ClusterOptions, PrivateCluster};
use crate::store::connect::connect;

/// How long the standby gets to stream and be counted synchronous.
const SYNC_WITHIN: Duration = Duration::from_secs(60);

/// A primary and its synchronous standby; both are stopped and removed on drop.
pub struct Replicated {
    /// The primary at start; after [`Replicated::fail_over`] a stopped server.
    pub primary: Arc<PrivateCluster>,
    /// The standby; after [`Replicated::fail_over`] the primary.
    pub standby: Arc<PrivateCluster>,
}

/// When each move of a failover was done.
#[derive(Debug, Clone, Copy)]
pub struct Failover {
    /// The old primary is gone (`pg_ctl stop -m immediate` returned).
    pub primary_stopped: Instant,
    /// The standby left recovery and takes writes (`pg_ctl promote -w` returned).
    pub promoted: Instant,
    /// The new primary's sessions have reloaded an empty `synchronous_standby_names`
    /// (seen by one of them): commits no longer wait for a standby.
    pub released: Instant,
}

impl Replicated {
    /// Starts a primary, makes it wait for one synchronous standby, copies and starts
    /// the standby (both with `options`), and returns once the standby streams and is
    /// counted synchronous. `options.durable` is required: without it commits use
    /// `synchronous_commit=off` and wait for no standby.
    pub async fn start(options: &ClusterOptions) -> anyhow::Result<Replicated> {
        anyhow::ensure!(
            options.durable,
            "a synchronous standby needs a durable primary (synchronous_commit on)"
        );
        let primary_options = options.clone();
        let primary =
            tokio::task::spawn_blocking(move || PrivateCluster::start_with(&primary_options))
                .await
                .context("primary start task")??;
        let admin = connect(primary.url()).await?;
        admin
            .batch_execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
            .await
            .context("require a synchronous standby")?;
        admin.batch_execute("SELECT pg_reload_conf()").await?;
        let primary = Arc::new(primary);
        let (from, standby_options) = (primary.clone(), options.clone());
        let standby = tokio::task::spawn_blocking(move || from.start_standby(&standby_options))
            .await
            .context("standby start task")??;
        let deadline = Instant::now() + SYNC_WITHIN;
        loop {
            let sync: i64 = admin
                .query_one(
                    "SELECT count(*) FROM pg_stat_replication
                     WHERE state = 'streaming' AND sync_state = 'sync'",
                    &[],
                )
                .await?
                .get(0);
            if sync > 0 {
                break;
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "the standby was not streaming synchronously within {SYNC_WITHIN:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(Replicated {
            primary,
            standby: Arc::new(standby),
        })
    }

    /// What happens when the primary dies and an HA manager notices: the primary stops
    /// at once, as in a crash (`pg_ctl stop -m immediate`); `outage` is awaited (the
    /// time the manager takes to notice and decide); then the standby is promoted, and
    /// its `synchronous_standby_names` is cleared and reloaded, which also releases any
    /// commit already waiting on it.
    pub async fn fail_over(
        &self,
        outage: impl std::future::Future<Output = ()>,
    ) -> anyhow::Result<Failover> {
        let primary = self.primary.clone();
        tokio::task::spawn_blocking(move || primary.stop_immediate())
            .await
            .context("stop task")??;
        let primary_stopped = Instant::now();
        outage.await;
        let standby = self.standby.clone();
        tokio::task::spawn_blocking(move || standby.promote())
            .await
            .context("promote task")??;
        let promoted = Instant::now();
        let admin = connect(self.standby.url()).await?;
        // One statement each: ALTER SYSTEM refuses to run in a transaction block, and
        // several statements in one simple query form one.
        admin
            .batch_execute("ALTER SYSTEM RESET synchronous_standby_names")
            .await
            .context("stop waiting for a standby")?;
        admin.batch_execute("SELECT pg_reload_conf()").await?;
        // The reload is a signal; a session rereads the file before its next command.
        let deadline = Instant::now() + SYNC_WITHIN;
        loop {
            let names: String = admin
                .query_one("SHOW synchronous_standby_names", &[])
                .await?
                .get(0);
            if names.is_empty() {
                break;
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "synchronous_standby_names still {names:?} after the reload"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(Failover {
            primary_stopped,
            promoted,
            released: Instant::now(),
        })
    }
}
