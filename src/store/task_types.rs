//! The task types this replica serves, registered in the database
//! (`tasklane.registered_task_types`) so the SQL door (`tasklane.queue_task`) knows
//! which types exist and resolves their defaults exactly as the HTTP door does.

use crate::store::Statements;
use tokio_postgres::GenericClient;

use super::DbError;
use crate::task::TaskType;

/// Upserts every type of `types` (with `input_bytes`, this replica's input bound), in
/// name order.
pub async fn register<C: GenericClient + Sync>(
    client: &C,
    types: &[&TaskType],
    input_bytes: usize,
) -> Result<(), DbError> {
    let mut types = types.to_vec();
    types.sort_by(|a, b| a.name.cmp(&b.name));
    let names: Vec<&str> = types.iter().map(|t| t.name.as_str()).collect();
    let attempts: Vec<i32> = types.iter().map(|t| t.max_attempts).collect();
    let restart: Vec<&str> = types.iter().map(|t| t.on_restart.as_str()).collect();
    let privacy: Vec<&str> = types.iter().map(|t| t.privacy.as_str()).collect();
    let lease: Vec<i32> = types.iter().map(|t| t.lease_seconds as i32).collect();
    let timeout: Vec<i32> = types
        .iter()
        .map(|t| t.attempt_timeout_seconds as i32)
        .collect();
    let deadline: Vec<Option<i64>> = types.iter().map(|t| t.deadline_seconds).collect();
    let resource: Vec<Option<&str>> = types.iter().map(|t| t.resource.as_deref()).collect();
    let input_bytes = i64::try_from(input_bytes).unwrap_or(i64::MAX);
    client
        .run(
            include_str!("../../sql/task_types_register.sql"),
            &[
                &names,
                &attempts,
                &restart,
                &privacy,
                &lease,
                &timeout,
                &deadline,
                &resource,
                &input_bytes,
            ],
        )
        .await?;
    Ok(())
}
