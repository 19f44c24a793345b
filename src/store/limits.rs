//! Admin writes of admission settings: limits with their reservation rows, emergency
//! stops, resource slots. Each is one statement (the row work is in
//! `tasklane.set_limit` and `set_resource`, see `sql/functions/`), so it is atomic in
//! the caller's transaction.
//! Arguments are validated by `crate::admission` before they get here.

use crate::store::Statements;
use tokio_postgres::GenericClient;

use super::DbError;

/// The key of one limit: kind, app (None: global), subject, window (rate only).
#[derive(Debug, Clone, Copy)]
pub struct LimitKey<'a> {
    pub kind: &'a str,
    pub app: Option<&'a str>,
    pub usage_subject: Option<&'a str>,
    pub window_seconds: Option<i32>,
}

/// Creates or changes a limit; returns its id.
pub async fn set_limit<C: GenericClient + Sync>(
    client: &C,
    key: LimitKey<'_>,
    max: i64,
) -> Result<i64, DbError> {
    let row = client
        .row(
            include_str!("../../sql/limit_set.sql"),
            &[
                &key.kind,
                &key.app,
                &key.usage_subject,
                &key.window_seconds,
                &max,
            ],
        )
        .await?;
    row.try_get(0)
}

/// Removes a limit; returns whether it existed.
pub async fn remove_limit<C: GenericClient + Sync>(
    client: &C,
    key: LimitKey<'_>,
) -> Result<bool, DbError> {
    let row = client
        .row_opt(
            include_str!("../../sql/limit_remove.sql"),
            &[&key.kind, &key.app, &key.usage_subject, &key.window_seconds],
        )
        .await?;
    Ok(row.is_some())
}

/// Turns the emergency stop of `app` (None: global) on or off.
pub async fn set_emergency_stop<C: GenericClient + Sync>(
    client: &C,
    app: Option<&str>,
    enabled: bool,
) -> Result<(), DbError> {
    client
        .run(
            include_str!("../../sql/emergency_stop_set.sql"),
            &[&app, &enabled],
        )
        .await?;
    Ok(())
}

/// Pauses (`paused`) or resumes task type `task_type` for every claim; returns whether
/// that changed anything.
pub async fn set_paused<C: GenericClient + Sync>(
    client: &C,
    task_type: &str,
    paused: bool,
) -> Result<bool, DbError> {
    let sql = if paused {
        include_str!("../../sql/task_type_pause.sql")
    } else {
        include_str!("../../sql/task_type_resume.sql")
    };
    Ok(client.run(sql, &[&task_type]).await? > 0)
}

/// Sets the slot count of a resource.
pub async fn set_resource<C: GenericClient + Sync>(
    client: &C,
    name: &str,
    slots: i32,
) -> Result<(), DbError> {
    client
        .run(include_str!("../../sql/resource_set.sql"), &[&name, &slots])
        .await?;
    Ok(())
}

/// Removes a resource (its tasks become unlimited); returns whether it existed.
pub async fn remove_resource<C: GenericClient + Sync>(
    client: &C,
    name: &str,
) -> Result<bool, DbError> {
    Ok(client
        .run(include_str!("../../sql/resource_remove.sql"), &[&name])
        .await?
        > 0)
}
