//! The database's clock, for sweeps that keep where their next pass starts
//! (`sql/clock.sql`).

use chrono::{DateTime, Utc};
use tokio_postgres::GenericClient;

use super::{DbError, Statements};

/// `now()`: the start of the caller's transaction, or of this statement's own.
pub async fn now<C: GenericClient + Sync>(client: &C) -> Result<DateTime<Utc>, DbError> {
    client
        .row(include_str!("../../sql/clock.sql"), &[])
        .await?
        .try_get("now")
}
