//! Bulk work for benchmarks: queue many tasks in one statement, add finished history,
//! wait for a fleet to work a backlog off, and check that it was worked correctly
//! (every task succeeded with exactly its three events).
//!
//! Times come from the database clock (`now()`, `finished_at`), so they are the same
//! clock the engine writes with and include every commit.

use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::{DateTime, Utc};
use tokio_postgres::Client;

use super::cpu::Backends;
use super::fleet::{Fleet, Memory};
use super::wal::{Counters, WalUse};
use crate::store;

/// What one drain measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Drained {
    pub replicas: usize,
    pub tasks: i64,
    /// From the commit of the enqueue to the last task's `finished_at`.
    pub seconds: f64,
    pub tasks_per_second: f64,
    /// Tasks whose state or events were not exactly queued, running, succeeded.
    pub broken: i64,
    /// Memory of each replica after the drain (peak = VmHWM).
    pub memory: Vec<Memory>,
    /// CPU seconds per 1,000 tasks spent in the replica processes and in the database
    /// backends of this database (where the cores went; only on the same machine).
    pub replica_cpu_ms_per_task: f64,
    pub postgres_cpu_ms_per_task: f64,
    /// CPU ms per task of the whole PostgreSQL server (every backend, autovacuum,
    /// checkpointer, WAL writer; reaped children included), from the checkpoint after
    /// the backlog was queued to the drain's end; None where the server runs elsewhere.
    pub postgres_server_cpu_ms_per_task: Option<f64>,
    /// WAL and commits per task, once [`Drained::finish_wal`] has read them.
    pub wal: Option<WalUse>,
    /// The counters at the drain's start (after the backlog was queued and a
    /// checkpoint taken).
    #[serde(skip)]
    pub wal_start: Counters,
}

impl Drained {
    /// Reads what the drain wrote to the WAL and committed, per task. Call it once the
    /// fleet has stopped: a session's counters are complete when it has exited.
    pub async fn finish_wal(&mut self, client: &Client) -> anyhow::Result<WalUse> {
        let wal = self.wal_start.finish(client, self.tasks).await?;
        self.wal = Some(wal);
        Ok(wal)
    }
}

/// Queues `count` tasks of `task_type` for `app` in one statement (see
/// `sql/load/enqueue.sql`), inside the caller's transaction when given one.
pub async fn enqueue<C: tokio_postgres::GenericClient + Sync>(
    client: &C,
    app: &str,
    task_type: &str,
    count: i64,
    input: &serde_json::Value,
) -> anyhow::Result<()> {
    let prefix = format!("{}-", uuid::Uuid::now_v7());
    super::store::enqueue(client, app, task_type, count, &prefix, input)
        .await
        .context("enqueue tasks")
}

/// Adds `count` finished tasks with their events, in chunks of 100,000, then VACUUM
/// ANALYZE so the planner and visibility map see the table as a deployment would.
pub async fn add_history(client: &Client, app: &str, count: i64) -> anyhow::Result<()> {
    let mut left = count;
    while left > 0 {
        let chunk = left.min(100_000);
        let prefix = format!("{}-", uuid::Uuid::now_v7());
        super::store::add_history(client, app, chunk, &prefix)
            .await
            .context("add history")?;
        left -= chunk;
    }
    Ok(super::store::vacuum(client).await?)
}

/// Tasks of `app` and how many of them are not exactly queued → running → succeeded.
pub async fn verify(client: &Client, app: &str) -> anyhow::Result<(i64, i64)> {
    Ok(super::store::verify(client, app).await?)
}

/// Progress of `app`'s tasks: (finished, failed, total, last finished_at).
pub async fn progress(
    client: &Client,
    app: &str,
) -> anyhow::Result<(i64, i64, i64, Option<DateTime<Utc>>)> {
    Ok(super::store::progress(client, app).await?)
}

/// Whether `app` still has unfinished tasks (see `sql/load/pending.sql`).
pub async fn pending(client: &Client, app: &str) -> anyhow::Result<bool> {
    Ok(super::store::pending(client, app).await?)
}

/// Queues `count` noop tasks for `app` while the type is paused, takes a checkpoint and
/// samples the WAL counters, then resumes the type and wakes the fleet (NOTIFY) in one
/// transaction, waits until all have finished, and checks them. `fleet` is already
/// idle. The drain's WAL and commits are read by [`Drained::finish_wal`].
pub async fn drain(
    client: &mut Client,
    fleet: &Fleet,
    app: &str,
    count: i64,
) -> anyhow::Result<Drained> {
    queue(client, fleet, app, count)
        .await?
        .release(client, fleet)
        .await
}

/// A backlog queued behind its paused type by [`queue`], not yet released: a caller can
/// read its own counters between the two, so they hold the drain and not the queueing.
pub struct Backlog {
    app: String,
    task_type: String,
    replica_cpu_before: f64,
    backends_before: Backends,
    own_pid: i32,
    server_cpu_before: Option<f64>,
    wal_start: Counters,
}

/// The first half of [`drain`]: queues the backlog while its type is paused, then takes
/// a checkpoint and samples the WAL counters.
pub async fn queue(
    client: &mut Client,
    fleet: &Fleet,
    app: &str,
    count: i64,
) -> anyhow::Result<Backlog> {
    queue_of(client, fleet, app, "noop", count).await
}

/// [`queue`] of `count` tasks of `task_type` (one no worker has claimed yet: it is
/// paused until the release).
pub async fn queue_of(
    client: &mut Client,
    fleet: &Fleet,
    app: &str,
    task_type: &str,
    count: i64,
) -> anyhow::Result<Backlog> {
    let replica_cpu_before = fleet.total_cpu_seconds();
    let backends_before = Backends::read(client).await?;
    let tx = client.transaction().await?;
    store::limits::set_paused(&tx, task_type, true).await?;
    enqueue(&tx, app, task_type, count, &serde_json::json!({})).await?;
    // Statistics as autovacuum would have them within a minute (it counts our own
    // uncommitted rows): planned against an "empty" table, the claim sorts the whole
    // backlog instead of walking its index, a cost that grows with the backlog.
    super::store::analyze_tasks(&tx).await?;
    tx.commit().await?;
    let wal_start = Counters::start(client).await?;
    let own_pid = super::store::own_pid(client).await?;
    Ok(Backlog {
        app: app.to_owned(),
        task_type: task_type.to_owned(),
        replica_cpu_before,
        backends_before,
        own_pid,
        server_cpu_before: super::cpu::server_seconds(own_pid),
        wal_start,
    })
}

impl Backlog {
    /// The second half of [`drain`]: resumes the type and wakes the fleet in one
    /// transaction, waits until every task has finished, and checks them.
    pub async fn release(self, client: &mut Client, fleet: &Fleet) -> anyhow::Result<Drained> {
        let app = self.app.as_str();
        let tx = client.transaction().await?;
        store::limits::set_paused(&tx, &self.task_type, false).await?;
        store::notify::wake_replicas(&tx).await?;
        tx.commit().await?;
        let start: DateTime<Utc> = super::store::clock(client).await?;
        let deadline = Instant::now() + Duration::from_secs(600);
        // Poll cheaply and not too often: the poller shares the cores with the fleet,
        // and the end time comes from finished_at, not from when the poll noticed.
        while pending(client, app).await? {
            anyhow::ensure!(
                Instant::now() < deadline,
                "drain did not finish within 600 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let server_cpu = super::cpu::server_seconds(self.own_pid)
            .zip(self.server_cpu_before)
            .map(|(after, before)| after - before);
        let (_, _, _, last) = progress(client, app).await?;
        let last = last.context("finished tasks have finished_at")?;
        let replica_cpu = fleet.total_cpu_seconds() - self.replica_cpu_before;
        let backend_cpu = self
            .backends_before
            .used_until(&Backends::read(client).await?);
        let seconds = (last - start).num_microseconds().unwrap_or(0) as f64 / 1e6;
        let (tasks, broken) = verify(client, app).await?;
        Ok(Drained {
            replicas: fleet.pids().len(),
            tasks,
            seconds,
            tasks_per_second: tasks as f64 / seconds.max(1e-6),
            broken,
            memory: fleet.memory(),
            replica_cpu_ms_per_task: replica_cpu * 1000.0 / tasks.max(1) as f64,
            postgres_cpu_ms_per_task: backend_cpu * 1000.0 / tasks.max(1) as f64,
            postgres_server_cpu_ms_per_task: server_cpu.map(|s| s * 1000.0 / tasks.max(1) as f64),
            wal: None,
            wal_start: self.wal_start,
        })
    }
}
