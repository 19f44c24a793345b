//! Webhook endpoints and their secrets, and the delivery log an app reads: the
//! statements behind `PUT/GET/DELETE /v1/webhooks...`. Every statement is filtered by
//! the app (endpoint names are unique per app). The outbox's own statements, which the
//! deliverer runs, are in `outbox`.

use crate::store::Statements;
use chrono::{DateTime, Utc};
use tokio_postgres::{GenericClient, Row};
use uuid::Uuid;

use super::DbError;

/// How long a rotated-out secret still signs.
pub const ROTATION_GRACE_SECONDS: f64 = 24.0 * 60.0 * 60.0;

/// An endpoint as stored (never with its secrets).
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub id: Uuid,
    pub name: String,
    pub url: String,
    pub events: Vec<String>,
    pub disabled: bool,
    pub created_at: DateTime<Utc>,
    /// Whether the statement that returned it created it.
    pub created: bool,
}

impl Endpoint {
    fn from_row(row: &Row) -> Result<Self, DbError> {
        Ok(Endpoint {
            id: row.try_get("id")?,
            name: row.try_get("name")?,
            url: row.try_get("url")?,
            events: row.try_get("events")?,
            disabled: row.try_get("disabled")?,
            created_at: row.try_get("created_at")?,
            created: row.try_get("created")?,
        })
    }
}

/// Creates or updates (and enables) `app`'s endpoint `name`; locks it until the
/// caller's transaction ends.
pub async fn upsert<C: GenericClient + Sync>(
    client: &C,
    app: &str,
    name: &str,
    url: &str,
    events: &[String],
) -> Result<Endpoint, DbError> {
    let row = client
        .row(
            include_str!("../../sql/webhook_endpoint_upsert.sql"),
            &[&Uuid::now_v7(), &app, &name, &url, &events],
        )
        .await?;
    Endpoint::from_row(&row)
}

/// `app`'s endpoint `name`, locked until the caller's transaction ends.
pub async fn lock<C: GenericClient + Sync>(
    client: &C,
    app: &str,
    name: &str,
) -> Result<Option<Endpoint>, DbError> {
    let row = client
        .row_opt(
            include_str!("../../sql/webhook_endpoint_lock.sql"),
            &[&app, &name],
        )
        .await?;
    row.as_ref().map(Endpoint::from_row).transpose()
}

/// `app`'s endpoint `name`.
pub async fn get<C: GenericClient + Sync>(
    client: &C,
    app: &str,
    name: &str,
) -> Result<Option<Endpoint>, DbError> {
    let row = client
        .row_opt(
            include_str!("../../sql/webhook_endpoint_get.sql"),
            &[&app, &name],
        )
        .await?;
    row.as_ref().map(Endpoint::from_row).transpose()
}

/// Every endpoint of `app`, by name.
pub async fn list<C: GenericClient + Sync>(
    client: &C,
    app: &str,
) -> Result<Vec<Endpoint>, DbError> {
    let rows = client
        .rows(include_str!("../../sql/webhook_endpoint_list.sql"), &[&app])
        .await?;
    rows.iter().map(Endpoint::from_row).collect()
}

/// Deletes `app`'s endpoint `name` with its secrets and deliveries; whether it existed.
pub async fn delete<C: GenericClient + Sync>(
    client: &C,
    app: &str,
    name: &str,
) -> Result<bool, DbError> {
    let row = client
        .row_opt(
            include_str!("../../sql/webhook_endpoint_delete.sql"),
            &[&app, &name],
        )
        .await?;
    Ok(row.is_some())
}

/// Makes `secret` the endpoint's current secret; the previous one signs for
/// [`ROTATION_GRACE_SECONDS`] more. Call with the endpoint locked (in a transaction).
pub async fn rotate_secret<C: GenericClient + Sync>(
    client: &C,
    endpoint_id: Uuid,
    secret: &str,
) -> Result<(), DbError> {
    client
        .run(
            include_str!("../../sql/webhook_secrets_retire.sql"),
            &[&endpoint_id, &ROTATION_GRACE_SECONDS],
        )
        .await?;
    client
        .run(
            include_str!("../../sql/webhook_secret_insert.sql"),
            &[&endpoint_id, &secret],
        )
        .await?;
    Ok(())
}

/// One notification in an endpoint's log.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    pub id: Uuid,
    pub task_id: Uuid,
    pub event: String,
    pub status: String,
    pub attempts: i32,
    pub last_status: Option<i32>,
    pub last_error: Option<String>,
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub delivered_at: Option<DateTime<Utc>>,
}

/// The newest `limit` notifications of endpoint `endpoint_id`.
pub async fn deliveries<C: GenericClient + Sync>(
    client: &C,
    endpoint_id: Uuid,
    limit: i64,
) -> Result<Vec<Delivery>, DbError> {
    let rows = client
        .rows(
            include_str!("../../sql/webhook_deliveries_list.sql"),
            &[&endpoint_id, &limit],
        )
        .await?;
    rows.iter()
        .map(|row| {
            let status: String = row.try_get("status")?;
            let pending = status == "pending";
            Ok(Delivery {
                id: row.try_get("id")?,
                task_id: row.try_get("task_id")?,
                event: row.try_get("event")?,
                attempts: row.try_get("attempts")?,
                last_status: row.try_get("last_status")?,
                last_error: row.try_get("last_error")?,
                next_attempt_at: if pending {
                    row.try_get("next_attempt_at")?
                } else {
                    None
                },
                delivered_at: row.try_get("delivered_at")?,
                status,
            })
        })
        .collect()
}

/// Makes notification `id` of endpoint `endpoint_id` pending and due now (its schedule
/// afresh, the same webhook-id) and wakes the deliverers; whether it exists.
pub async fn redeliver<C: GenericClient + Sync>(
    client: &C,
    endpoint_id: Uuid,
    id: Uuid,
) -> Result<bool, DbError> {
    let row = client
        .row_opt(
            include_str!("../../sql/webhook_redeliver.sql"),
            &[&endpoint_id, &id],
        )
        .await?;
    Ok(row.is_some())
}
