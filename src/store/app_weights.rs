//! App weights (`tasklane.app_weights`): an operator's upsert of one app's weight and
//! the list of the apps there are to weigh. What a weight does is the claims' business
//! (see `task::app_weight`); here the rows are only written and read, one statement
//! each. Arguments are validated by `task::app_weight` before they get here.

use crate::store::Statements;
use chrono::{DateTime, Utc};
use tokio_postgres::GenericClient;

use super::DbError;

/// One app and its weight, as `GET /v1/admin/apps` lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct AppWeight {
    #[schema(example = "mail")]
    pub app: String,
    /// Its share of the claims' turns against the other apps with claimable work in the
    /// same priority level; 1 when never set.
    #[schema(minimum = 1, maximum = 100, example = 3)]
    pub weight: i16,
    /// When the weight was last set; null: never (the default, 1).
    pub updated_at: Option<DateTime<Utc>>,
}

/// Stores `weight` as `app`'s weight, replacing any earlier one.
pub async fn set_weight<C: GenericClient + Sync>(
    client: &C,
    app: &str,
    weight: i16,
) -> Result<(), DbError> {
    client
        .run(
            include_str!("../../sql/app_weight_set.sql"),
            &[&app, &weight],
        )
        .await?;
    Ok(())
}

/// Every app with an unrevoked token or a stored weight, by app, with its weight.
pub async fn list<C: GenericClient + Sync>(client: &C) -> Result<Vec<AppWeight>, DbError> {
    let rows = client
        .rows(include_str!("../../sql/app_list.sql"), &[])
        .await?;
    rows.iter()
        .map(|row| {
            Ok(AppWeight {
                app: row.try_get("app")?,
                weight: row.try_get("weight")?,
                updated_at: row.try_get("updated_at")?,
            })
        })
        .collect()
}
