//! Statements of the load generator and the benchmarks (`sql/load/`): bulk enqueue and
//! history, the checks and clocks a drain is measured by, WAL and session counters.
//! Production never runs these: no role of `tasklane serve` calls them, only `tasklane
//! load`, the benches and their tests. They sit here, apart from `store`, so that a
//! reader of `store` and of `sql/` sees only what a serving replica sends; they still go
//! through the store's door ([`Statements`]) like every statement.

use crate::store::{DbError, Statements};
use chrono::{DateTime, Utc};
use tokio_postgres::{Client, GenericClient};
use uuid::Uuid;

/// Queues `count` tasks of `task_type` for `app` in one statement (keys
/// `<prefix><n>`; 3 attempts, 30 s lease, 300 s timeout), in the caller's transaction
/// when given one.
pub async fn enqueue<C: GenericClient + Sync>(
    client: &C,
    app: &str,
    task_type: &str,
    count: i64,
    prefix: &str,
    input: &serde_json::Value,
) -> Result<(), DbError> {
    client
        .run(
            include_str!("../../sql/load/enqueue.sql"),
            &[
                &task_type, &count, &app, &prefix, input, &3i32, &30i32, &300i32,
            ],
        )
        .await?;
    Ok(())
}

/// Adds `count` finished tasks of `app` with their events (keys `<prefix><n>`).
pub async fn add_history(
    client: &Client,
    app: &str,
    count: i64,
    prefix: &str,
) -> Result<(), DbError> {
    client
        .run(
            include_str!("../../sql/load/history.sql"),
            &[&count, &app, &prefix],
        )
        .await?;
    Ok(())
}

/// VACUUM ANALYZE of the tables history grows (outside any transaction).
pub async fn vacuum(client: &Client) -> Result<(), DbError> {
    client
        .batch_execute(include_str!("../../sql/load/vacuum.sql"))
        .await
}

/// ANALYZE of the tasks table, counting the caller's uncommitted rows.
pub async fn analyze_tasks<C: GenericClient + Sync>(client: &C) -> Result<(), DbError> {
    client
        .run(include_str!("../../sql/load/analyze.sql"), &[])
        .await?;
    Ok(())
}

/// Tasks of `app` and how many of them are not exactly queued → running → succeeded.
pub async fn verify(client: &Client, app: &str) -> Result<(i64, i64), DbError> {
    let row = client
        .row(include_str!("../../sql/load/verify.sql"), &[&app])
        .await?;
    Ok((row.try_get("tasks")?, row.try_get("broken")?))
}

/// Progress of `app`'s tasks: (finished, failed, total, last finished_at).
pub async fn progress(
    client: &Client,
    app: &str,
) -> Result<(i64, i64, i64, Option<DateTime<Utc>>), DbError> {
    let row = client
        .row(include_str!("../../sql/load/progress.sql"), &[&app])
        .await?;
    Ok((
        row.try_get("finished")?,
        row.try_get("failed")?,
        row.try_get("total")?,
        row.try_get("last_finished_at")?,
    ))
}

/// Whether `app` still has unfinished tasks.
pub async fn pending(client: &Client, app: &str) -> Result<bool, DbError> {
    client
        .row(include_str!("../../sql/load/pending.sql"), &[&app])
        .await?
        .try_get(0)
}

/// How many of `ids` have not finished.
pub async fn open_count(client: &Client, ids: &[Uuid]) -> Result<i64, DbError> {
    client
        .row(include_str!("../../sql/load/open.sql"), &[&ids])
        .await?
        .try_get(0)
}

/// How many of `ids` finished in a state other than succeeded.
pub async fn failed_count(client: &Client, ids: &[Uuid]) -> Result<i64, DbError> {
    client
        .row(include_str!("../../sql/load/failed.sql"), &[&ids])
        .await?
        .try_get(0)
}

/// When a task was created, first claimed and finished (all on the database's clock).
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub running_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// The [`Timing`] of each of `ids`.
pub async fn timings(client: &Client, ids: &[Uuid]) -> Result<Vec<Timing>, DbError> {
    let rows = client
        .rows(include_str!("../../sql/load/timings.sql"), &[&ids])
        .await?;
    rows.iter()
        .map(|row| {
            Ok(Timing {
                id: row.try_get("id")?,
                created_at: row.try_get("created_at")?,
                running_at: row.try_get("running_at")?,
                finished_at: row.try_get("finished_at")?,
            })
        })
        .collect()
}

/// The database's clock now.
pub async fn clock(client: &Client) -> Result<DateTime<Utc>, DbError> {
    client
        .row(include_str!("../../sql/load/clock.sql"), &[])
        .await?
        .try_get(0)
}

/// Process ids of the other backends connected to this database.
pub async fn backend_pids(client: &Client) -> Result<Vec<i32>, DbError> {
    let rows = client
        .rows(include_str!("../../sql/load/backends.sql"), &[])
        .await?;
    rows.iter().map(|row| row.try_get(0)).collect()
}

/// The process id of this session's backend.
pub async fn own_pid(client: &Client) -> Result<i32, DbError> {
    client
        .row(include_str!("../../sql/load/backend_pid.sql"), &[])
        .await?
        .try_get(0)
}

/// Tasks of `app` that did not succeed on their first and only claim (a lost lease, a
/// retry, a second claim); events of their own, such as progress, are allowed.
pub async fn reclaimed(client: &Client, app: &str) -> Result<i64, DbError> {
    client
        .row(include_str!("../../sql/load/reclaimed.sql"), &[&app])
        .await?
        .try_get(0)
}

/// Transactions committed and rolled back in this database so far.
pub async fn transactions(client: &Client) -> Result<i64, DbError> {
    client
        .row(include_str!("../../sql/load/transactions.sql"), &[])
        .await?
        .try_get(0)
}

/// How many replicas are registered.
pub async fn replica_count(client: &Client) -> Result<i64, DbError> {
    client
        .row(include_str!("../../sql/load/replicas.sql"), &[])
        .await?
        .try_get(0)
}

/// Webhook notifications of a benchmark's app: how many delivered.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct WebhookProgress {
    pub delivered: i64,
    pub total: i64,
    /// From the first notification written to the last delivered.
    pub seconds: Option<f64>,
    /// From the last notification written to the last delivered.
    pub lag_seconds: Option<f64>,
}

/// Reads [`WebhookProgress`] of `app`.
pub async fn webhook_progress(client: &Client, app: &str) -> Result<WebhookProgress, DbError> {
    let row = client
        .row(include_str!("../../sql/load/webhooks.sql"), &[&app])
        .await?;
    Ok(WebhookProgress {
        delivered: row.try_get("delivered")?,
        total: row.try_get("total")?,
        seconds: row.try_get("seconds")?,
        lag_seconds: row.try_get("lag_seconds")?,
    })
}

/// The WAL position and the cumulative WAL and commit counters (see
/// `sql/load/wal.sql`): (position in bytes, records, full-page images, flushes, commits).
pub async fn wal_counters(client: &Client) -> Result<(f64, i64, i64, i64, i64), DbError> {
    let row = client
        .row(include_str!("../../sql/load/wal.sql"), &[])
        .await?;
    Ok((row.get(0), row.get(1), row.get(2), row.get(3), row.get(4)))
}

/// Other client sessions on this database now.
pub async fn other_sessions(client: &Client) -> Result<i64, DbError> {
    let row = client
        .row(include_str!("../../sql/load/sessions.sql"), &[])
        .await?;
    Ok(row.get(0))
}

/// A checkpoint now, so the work measured next starts with no full-page image owed
/// from before it (needs a superuser or `pg_checkpoint`).
pub async fn checkpoint(client: &Client) -> Result<(), DbError> {
    client.batch_execute("CHECKPOINT").await?;
    Ok(())
}

/// One tasklane table's size and upkeep (see `sql/load/relations.sql`).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Relation {
    pub name: String,
    pub heap_bytes: i64,
    pub index_bytes: i64,
    pub toast_bytes: i64,
    pub live_tuples: i64,
    pub dead_tuples: i64,
    pub autovacuums: i64,
    /// VACUUMs not by autovacuum: tasklane's vacuum keeper's.
    pub vacuums: i64,
    pub autoanalyzes: i64,
}

impl Relation {
    /// Heap, indexes and TOAST together.
    pub fn total_bytes(&self) -> i64 {
        self.heap_bytes + self.index_bytes + self.toast_bytes
    }
}

/// Every tasklane table, by name.
pub async fn relations(client: &Client) -> Result<Vec<Relation>, DbError> {
    let rows = client
        .rows(include_str!("../../sql/load/relations.sql"), &[])
        .await?;
    rows.iter()
        .map(|row| {
            Ok(Relation {
                name: row.try_get("name")?,
                heap_bytes: row.try_get::<_, Option<i64>>("heap_bytes")?.unwrap_or(0),
                index_bytes: row.try_get::<_, Option<i64>>("index_bytes")?.unwrap_or(0),
                toast_bytes: row.try_get::<_, Option<i64>>("toast_bytes")?.unwrap_or(0),
                live_tuples: row.try_get("live_tuples")?,
                dead_tuples: row.try_get("dead_tuples")?,
                autovacuums: row.try_get("autovacuums")?,
                vacuums: row.try_get("vacuums")?,
                autoanalyzes: row.try_get("autoanalyzes")?,
            })
        })
        .collect()
}

/// Tasks not finished yet, of every app.
pub async fn unfinished(client: &Client) -> Result<i64, DbError> {
    let row = client
        .row(include_str!("../../sql/load/backlog.sql"), &[])
        .await?;
    row.try_get("unfinished")
}
