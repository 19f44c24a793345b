//! The admin overview (`GET /v1/admin/overview`): queue depth by state and type, live
//! replicas, resources in use, every admission limit with its current use, emergency
//! stops, paused task types, circuit breakers and today's refusals. Read-only; each part
//! is one statement.

use crate::store::Statements;
use chrono::{DateTime, Utc};
use tokio_postgres::GenericClient;
use uuid::Uuid;

use super::DbError;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct Overview {
    pub queue: Vec<QueueDepth>,
    pub replicas: Vec<LiveReplica>,
    pub resources: Vec<ResourceUse>,
    pub limits: Vec<LimitUse>,
    pub emergency_stops: Vec<EmergencyStop>,
    pub paused_task_types: Vec<PausedType>,
    /// Circuit breakers that counted a failure since their last reset (a route not
    /// listed is closed).
    pub circuits: Vec<super::circuits::Circuit>,
    pub refusals_today: Vec<RefusalCount>,
    /// Terminal notifications: endpoints, pending and failed deliveries.
    pub webhooks: super::outbox::WebhooksOverview,
}

/// A task type whose tasks no claim takes until it is resumed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct PausedType {
    pub task_type: String,
    pub paused_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct QueueDepth {
    pub state: String,
    pub task_type: String,
    pub count: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct LiveReplica {
    pub id: Uuid,
    pub name: String,
    pub started_at: DateTime<Utc>,
    pub heartbeat_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct ResourceUse {
    pub name: String,
    pub slots: i32,
    pub in_use: i64,
}

/// One limit and its use: capacity, tasks holding a slot; rate, admissions in the
/// window; budget, units spent today (UTC).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct LimitUse {
    pub id: i64,
    pub kind: String,
    /// None: global.
    pub app: Option<String>,
    pub usage_subject: Option<String>,
    pub window_seconds: Option<i32>,
    pub limit: i64,
    pub used: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct EmergencyStop {
    /// None: global.
    pub app: Option<String>,
    pub enabled_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct RefusalCount {
    pub code: String,
    pub app: String,
    pub count: i64,
}

fn non_empty(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

/// Reads the whole overview.
pub async fn overview<C: GenericClient + Sync>(client: &C) -> Result<Overview, DbError> {
    let queue = client
        .rows(include_str!("../../sql/overview_queue.sql"), &[])
        .await?;
    let replicas = client
        .rows(include_str!("../../sql/overview_replicas.sql"), &[])
        .await?;
    let resources = client
        .rows(include_str!("../../sql/overview_resources.sql"), &[])
        .await?;
    let limits = client
        .rows(include_str!("../../sql/overview_limits.sql"), &[])
        .await?;
    let stops = client
        .rows(include_str!("../../sql/overview_stops.sql"), &[])
        .await?;
    let refusals = client
        .rows(include_str!("../../sql/overview_refusals.sql"), &[])
        .await?;
    let paused = client
        .rows(include_str!("../../sql/overview_paused.sql"), &[])
        .await?;
    let circuits = super::circuits::list(client).await?;
    Ok(Overview {
        queue: queue
            .iter()
            .map(|r| {
                Ok(QueueDepth {
                    state: r.try_get(0)?,
                    task_type: r.try_get(1)?,
                    count: r.try_get(2)?,
                })
            })
            .collect::<Result<_, DbError>>()?,
        replicas: replicas
            .iter()
            .map(|r| {
                Ok(LiveReplica {
                    id: r.try_get(0)?,
                    name: r.try_get(1)?,
                    started_at: r.try_get(2)?,
                    heartbeat_at: r.try_get(3)?,
                })
            })
            .collect::<Result<_, DbError>>()?,
        resources: resources
            .iter()
            .map(|r| {
                Ok(ResourceUse {
                    name: r.try_get(0)?,
                    slots: r.try_get(1)?,
                    in_use: r.try_get(2)?,
                })
            })
            .collect::<Result<_, DbError>>()?,
        limits: limits
            .iter()
            .map(limit_use)
            .collect::<Result<_, DbError>>()?,
        emergency_stops: stops
            .iter()
            .map(|r| {
                Ok(EmergencyStop {
                    app: non_empty(r.try_get(0)?),
                    enabled_at: r.try_get(1)?,
                })
            })
            .collect::<Result<_, DbError>>()?,
        paused_task_types: paused
            .iter()
            .map(|r| {
                Ok(PausedType {
                    task_type: r.try_get(0)?,
                    paused_at: r.try_get(1)?,
                })
            })
            .collect::<Result<_, DbError>>()?,
        circuits,
        refusals_today: refusals
            .iter()
            .map(|r| {
                Ok(RefusalCount {
                    code: r.try_get(0)?,
                    app: r.try_get(1)?,
                    count: r.try_get(2)?,
                })
            })
            .collect::<Result<_, DbError>>()?,
        webhooks: super::outbox::overview(client, None).await?,
    })
}

fn limit_use(r: &tokio_postgres::Row) -> Result<LimitUse, DbError> {
    let window: i32 = r.try_get("window_seconds")?;
    Ok(LimitUse {
        id: r.try_get("id")?,
        kind: r.try_get("kind")?,
        app: non_empty(r.try_get("app")?),
        usage_subject: non_empty(r.try_get("usage_subject")?),
        window_seconds: (window > 0).then_some(window),
        limit: r.try_get("max")?,
        used: r.try_get("used")?,
    })
}
