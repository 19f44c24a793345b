//! The replica registry: each replica keeps a row alive; a replica that starts while no
//! other is live is a cold start: the tasks that replica processes held are lost and
//! get their restart policy.

use crate::store::Statements;
use tokio_postgres::GenericClient;
use uuid::Uuid;

use super::DbError;

/// The roles a replica runs that the others count: the maintenance role shares the
/// cluster-wide sweeps, the worker role the idle claim polls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Duties {
    pub maintains: bool,
    pub works: bool,
}

/// How many live replicas share each duty, this one included when it has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sharers {
    pub maintainers: u32,
    pub workers: u32,
}

impl Sharers {
    fn of(row: &tokio_postgres::Row) -> Result<Self, DbError> {
        Ok(Sharers {
            maintainers: count(row.try_get("maintainers")?),
            workers: count(row.try_get("workers")?),
        })
    }
}

/// What registering told: whether another replica is live, and how many share each duty.
#[derive(Debug, Clone, Copy)]
pub struct Registered {
    pub other_live: bool,
    pub sharers: Sharers,
}

/// Registers `id` and answers whether another replica is live. Call it in a transaction
/// and keep that transaction open through the cold-start recovery, so replicas starting
/// together decide one after the other.
pub async fn register<C: GenericClient + Sync>(
    tx: &C,
    id: Uuid,
    name: &str,
    ttl_seconds: f64,
    duties: Duties,
) -> Result<Registered, DbError> {
    tx.run(include_str!("../../sql/replica_lock.sql"), &[])
        .await?;
    let row = tx
        .row(
            include_str!("../../sql/replica_register.sql"),
            &[&id, &name, &ttl_seconds, &duties.maintains, &duties.works],
        )
        .await?;
    Ok(Registered {
        other_live: row.try_get("other_live")?,
        sharers: Sharers::of(&row)?,
    })
}

/// Keeps `id` live for another `ttl_seconds`; answers how many live replicas share each
/// duty.
pub async fn heartbeat<C: GenericClient + Sync>(
    client: &C,
    id: Uuid,
    name: &str,
    ttl_seconds: f64,
    duties: Duties,
) -> Result<Sharers, DbError> {
    let row = client
        .row(
            include_str!("../../sql/replica_heartbeat.sql"),
            &[&id, &name, &ttl_seconds, &duties.maintains, &duties.works],
        )
        .await?;
    Sharers::of(&row)
}

fn count(n: i64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Removes `id` (clean shutdown).
pub async fn deregister<C: GenericClient + Sync>(client: &C, id: Uuid) -> Result<(), DbError> {
    client
        .run(include_str!("../../sql/replica_deregister.sql"), &[&id])
        .await?;
    Ok(())
}
