//! Queue depth for metrics: non-terminal tasks by type and state, sampled by one
//! replica of the cluster at a time (a session advisory lock elects it), so scrapes of
//! any number of replicas cost one query per interval, not one per scrape.

use crate::store::Statements;
use tokio_postgres::Client;

use super::DbError;

/// The sampler election's advisory lock key ("tlqueue" in ASCII).
pub const SAMPLER_LOCK: i64 = 0x0074_6c71_7565_7565;

/// Non-terminal tasks of one type in one state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Depth {
    pub task_type: String,
    pub state: String,
    pub count: i64,
}

/// Tries to become the sampler on this (dedicated) connection; true once it is.
pub async fn elect(client: &Client) -> Result<bool, DbError> {
    client
        .row(
            include_str!("../../sql/queue_sampler_lock.sql"),
            &[&SAMPLER_LOCK],
        )
        .await?
        .try_get(0)
}

/// The current queue depth, with a zero for every registered type in every
/// non-terminal state it has no task in.
pub async fn depth(client: &Client) -> Result<Vec<Depth>, DbError> {
    let rows = client
        .rows(include_str!("../../sql/queue_depth_sample.sql"), &[])
        .await?;
    rows.iter()
        .map(|row| {
            Ok(Depth {
                task_type: row.try_get("task_type")?,
                state: row.try_get("state")?,
                count: row.try_get("count")?,
            })
        })
        .collect()
}

/// Seconds the oldest claimable task of one type has waited (0 when none waits).
#[derive(Debug, Clone, PartialEq)]
pub struct OldestAge {
    pub task_type: String,
    pub seconds: f64,
}

/// The oldest claimable task's age of every registered type (and of any other type
/// with tasks waiting).
pub async fn oldest_age(client: &Client) -> Result<Vec<OldestAge>, DbError> {
    let rows = client
        .rows(include_str!("../../sql/queue_oldest_age.sql"), &[])
        .await?;
    rows.iter()
        .map(|row| {
            Ok(OldestAge {
                task_type: row.try_get("task_type")?,
                seconds: row.try_get("seconds")?,
            })
        })
        .collect()
}

/// How long the sampler's connection may stay silent while it owes an answer: its
/// statements are small, and a black-holed one would otherwise stop the gauges for good.
const SAMPLER_SILENCE: std::time::Duration = std::time::Duration::from_secs(15);

/// A dedicated connection for the sampler (its session holds the election lock), TLS
/// as the URL says.
pub async fn connect(database_url: &str) -> anyhow::Result<Client> {
    let (client, connection) = super::connect::Database::from_url(database_url)?
        .connect_watched(Some(SAMPLER_SILENCE))
        .await?;
    tokio::spawn(async move {
        if let Err(error) = connection.await {
            tracing::debug!(%error, "sampler connection ended");
        }
    });
    Ok(client)
}
