//! The replica registry: each replica keeps a row alive; a replica that starts while no
//! other is live is a cold start: the tasks that replica processes held are lost and
//! get their restart policy.

use crate::store::Statements;
use tokio_postgres::GenericClient;
use uuid::Uuid;

use super::DbError;

/// Registers `id` and answers whether another replica is live. Call it in a transaction
/// and keep that transaction open through the cold-start recovery, so replicas starting
/// together decide one after the other.
pub async fn register<C: GenericClient + Sync>(
    tx: &C,
    id: Uuid,
    name: &str,
    ttl_seconds: f64,
) -> Result<bool, DbError> {
    tx.run(include_str!("../../sql/replica_lock.sql"), &[])
        .await?;
    let row = tx
        .row(
            include_str!("../../sql/replica_register.sql"),
            &[&id, &name, &ttl_seconds],
        )
        .await?;
    row.try_get("other_live")
}

/// Keeps `id` live for another `ttl_seconds`.
pub async fn heartbeat<C: GenericClient + Sync>(
    client: &C,
    id: Uuid,
    name: &str,
    ttl_seconds: f64,
) -> Result<(), DbError> {
    client
        .run(
            include_str!("../../sql/replica_heartbeat.sql"),
            &[&id, &name, &ttl_seconds],
        )
        .await?;
    Ok(())
}

/// Removes `id` (clean shutdown).
pub async fn deregister<C: GenericClient + Sync>(client: &C, id: Uuid) -> Result<(), DbError> {
    client
        .run(include_str!("../../sql/replica_deregister.sql"), &[&id])
        .await?;
    Ok(())
}
