//! The claims' floors (`tasklane.turn_floors`): where each task type and priority's
//! claims start reading the claimable index. Raised to where the claims have got by
//! the maintenance role (`maintenance::floors`); see `sql/floors_raise.sql`.

use tokio_postgres::Client;

use super::{DbError, Statements};

/// What one raise did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Raised {
    /// Floors raised.
    pub floors: i64,
    /// Claimable tasks the claims had passed, marked behind.
    pub behind: i64,
}

/// Raises every floor the claims have got past and no writer holds, in one
/// transaction: the locks first, then the raise in a statement whose snapshot
/// comes after them.
pub async fn raise(client: &mut Client) -> Result<Raised, DbError> {
    let tx = client.transaction().await?;
    let held = tx
        .rows(include_str!("../../sql/floors_hold.sql"), &[])
        .await?;
    if held.is_empty() {
        return Ok(Raised::default());
    }
    let mut types = Vec::with_capacity(held.len());
    let mut priorities = Vec::with_capacity(held.len());
    for row in &held {
        types.push(row.try_get::<_, String>("task_type")?);
        priorities.push(row.try_get::<_, i16>("priority")?);
    }
    let row = tx
        .row(
            include_str!("../../sql/floors_raise.sql"),
            &[&types, &priorities],
        )
        .await?;
    let raised = Raised {
        floors: row.try_get("raised")?,
        behind: row.try_get("marked")?,
    };
    tx.commit().await?;
    Ok(raised)
}
