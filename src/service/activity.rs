//! Recent activity of the whole deployment, for the console's chart.

use super::{ServiceError, Tasklane};
use crate::store::activity;

pub use activity::ActivityMinute;

impl Tasklane {
    /// Tasks submitted and finished per minute over the last hour, cluster-wide.
    pub async fn activity(&self) -> Result<Vec<ActivityMinute>, ServiceError> {
        let mut object = self.connection().await?;
        let client: &mut tokio_postgres::Client = &mut object;
        // A read-only transaction of its own, so its `SET LOCAL` ends with it.
        let tx = client.build_transaction().read_only(true).start().await?;
        let minutes = activity::last_hour(&tx).await?;
        tx.commit().await?;
        Ok(minutes)
    }
}
