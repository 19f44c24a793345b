//! Live output's writes and reads: the NOTIFYed deltas and the unlogged text so far of
//! running attempts (`tasklane.task_output`). Each write covers every attempt of a
//! replica at once, so PostgreSQL's cost grows with replicas and ticks, not tokens.

use crate::store::Statements;
use tokio_postgres::GenericClient;
use uuid::Uuid;

use super::DbError;

/// The channel live output deltas are NOTIFYed on (payload: a JSON
/// [`crate::task::live::Delta`]).
pub const OUTPUT_CHANNEL: &str = "tasklane_output";

/// NOTIFYs `payloads` in one statement.
pub async fn publish<C: GenericClient + Sync>(
    client: &C,
    payloads: &[String],
) -> Result<(), DbError> {
    client
        .run(include_str!("../../sql/output_publish.sql"), &[&payloads])
        .await?;
    Ok(())
}

/// Stores the text so far of each `(task, attempt, text)`.
pub async fn store<C: GenericClient + Sync>(
    client: &C,
    rows: &[(Uuid, i32, String)],
) -> Result<(), DbError> {
    let ids: Vec<Uuid> = rows.iter().map(|r| r.0).collect();
    let attempts: Vec<i32> = rows.iter().map(|r| r.1).collect();
    let texts: Vec<&str> = rows.iter().map(|r| r.2.as_str()).collect();
    client
        .run(
            include_str!("../../sql/output_store.sql"),
            &[&ids, &attempts, &texts],
        )
        .await?;
    Ok(())
}

/// Deletes the text so far of each ended `(task, attempt)`.
pub async fn forget<C: GenericClient + Sync>(
    client: &C,
    ended: &[(Uuid, i32)],
) -> Result<(), DbError> {
    let ids: Vec<Uuid> = ended.iter().map(|r| r.0).collect();
    let attempts: Vec<i32> = ended.iter().map(|r| r.1).collect();
    client
        .run(
            include_str!("../../sql/output_forget.sql"),
            &[&ids, &attempts],
        )
        .await?;
    Ok(())
}

/// The running attempt and its text so far, if `task` has one stored.
pub async fn get<C: GenericClient + Sync>(
    client: &C,
    task: Uuid,
) -> Result<Option<(i32, String)>, DbError> {
    let row = client
        .row_opt(include_str!("../../sql/output_get.sql"), &[&task])
        .await?;
    row.map(|row| Ok((row.try_get("attempt")?, row.try_get("text")?)))
        .transpose()
}
