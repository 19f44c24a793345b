//! Recent activity for the console's chart (`GET /v1/admin/activity`): tasks submitted
//! and finished per minute over the last hour, cluster-wide. Read-only, one statement.

use crate::store::Statements;
use chrono::{DateTime, Utc};
use tokio_postgres::GenericClient;

use super::DbError;

/// One minute of activity (the database's clock).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct ActivityMinute {
    /// The minute's start.
    pub minute: DateTime<Utc>,
    /// Tasks created in this minute (still in the table: pruned or deleted ones are gone).
    pub submitted: i64,
    /// Tasks that reached each terminal state in this minute.
    pub succeeded: i64,
    pub failed: i64,
    pub cancelled: i64,
}

/// The last 60 minutes, the current one included, oldest first; every minute is there.
/// Run it in a transaction: it turns JIT off for the rest of it (see the statement).
pub async fn last_hour<C: GenericClient + Sync>(
    client: &C,
) -> Result<Vec<ActivityMinute>, DbError> {
    client
        .run(include_str!("../../sql/activity_no_jit.sql"), &[])
        .await?;
    let rows = client
        .rows(include_str!("../../sql/activity_minutes.sql"), &[])
        .await?;
    rows.iter()
        .map(|r| {
            Ok(ActivityMinute {
                minute: r.try_get("minute")?,
                submitted: r.try_get("submitted")?,
                succeeded: r.try_get("succeeded")?,
                failed: r.try_get("failed")?,
                cancelled: r.try_get("cancelled")?,
            })
        })
        .collect()
}
