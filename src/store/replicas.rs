//! The replica registry: each replica keeps a row alive; a replica that starts while no
//! other is live is a cold start: the tasks that replica processes held are lost and
//! get their restart policy.

use crate::store::Statements;
use tokio_postgres::GenericClient;
use uuid::Uuid;

use super::DbError;

/// What registering told: whether another replica is live, and how many live replicas
/// run the maintenance role (this one included when it does).
#[derive(Debug, Clone, Copy)]
pub struct Registered {
    pub other_live: bool,
    pub maintainers: u32,
}

/// Registers `id` and answers whether another replica is live. Call it in a transaction
/// and keep that transaction open through the cold-start recovery, so replicas starting
/// together decide one after the other. `maintains`: whether it runs the maintenance role.
pub async fn register<C: GenericClient + Sync>(
    tx: &C,
    id: Uuid,
    name: &str,
    ttl_seconds: f64,
    maintains: bool,
) -> Result<Registered, DbError> {
    tx.run(include_str!("../../sql/replica_lock.sql"), &[])
        .await?;
    let row = tx
        .row(
            include_str!("../../sql/replica_register.sql"),
            &[&id, &name, &ttl_seconds, &maintains],
        )
        .await?;
    Ok(Registered {
        other_live: row.try_get("other_live")?,
        maintainers: count(row.try_get("maintainers")?),
    })
}

/// Keeps `id` live for another `ttl_seconds`; answers how many live replicas run the
/// maintenance role (this one included when `maintains`).
pub async fn heartbeat<C: GenericClient + Sync>(
    client: &C,
    id: Uuid,
    name: &str,
    ttl_seconds: f64,
    maintains: bool,
) -> Result<u32, DbError> {
    let row = client
        .row(
            include_str!("../../sql/replica_heartbeat.sql"),
            &[&id, &name, &ttl_seconds, &maintains],
        )
        .await?;
    Ok(count(row.try_get("maintainers")?))
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
