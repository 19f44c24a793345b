//! The claims' floors (`tasklane.turn_floors`): where each task type and priority's
//! claims start reading the claimable index. Raised to where the claims have got by
//! the maintenance role (`maintenance::floors`); see `sql/floors_raise.sql`.

use tokio_postgres::Client;

use super::{DbError, Statements};

/// How long the floor keeper's raise waits for the writers in flight to let go of a
/// floor. They commit within milliseconds; writers that come while it waits wait for
/// the raise in turn.
pub const LOCK_WAIT: std::time::Duration = std::time::Duration::from_millis(50);

/// What one raise did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Raised {
    /// Floors raised.
    pub floors: i64,
    /// Claimable tasks the claims had passed, marked behind.
    pub behind: i64,
    /// A floor due to rise stayed where it was: its writers held it past the wait.
    pub contended: bool,
}

/// Raises every floor the claims have got past, in one transaction: the locks first
/// (each waited for up to `wait`, [`LOCK_WAIT`] for the floor keeper), then the raise in
/// a statement whose snapshot comes after them.
pub async fn raise(client: &mut Client, wait: std::time::Duration) -> Result<Raised, DbError> {
    let tx = client.transaction().await?;
    tx.batch_execute(&format!(
        "SET LOCAL lock_timeout = '{}ms'",
        wait.as_millis().max(1)
    ))
    .await?;
    let held = match tx
        .rows(include_str!("../../sql/floors_hold.sql"), &[])
        .await
    {
        Ok(held) => held,
        Err(error) if let_go_later(&error) => {
            return Ok(Raised {
                contended: true,
                ..Raised::default()
            })
        }
        Err(error) => return Err(error),
    };
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
        contended: false,
    };
    tx.commit().await?;
    Ok(raised)
}

/// A floor's lock not granted within the wait, or a deadlock with a writer that holds
/// floors of several types: the next pass raises it.
fn let_go_later(error: &DbError) -> bool {
    use tokio_postgres::error::SqlState;
    error.code().is_some_and(|c| {
        *c == SqlState::LOCK_NOT_AVAILABLE || *c == SqlState::T_R_DEADLOCK_DETECTED
    })
}
