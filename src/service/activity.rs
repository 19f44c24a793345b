//! Recent activity of the whole deployment, for the console's chart.

use super::{ServiceError, Tasklane};
use crate::store::{self, activity};

pub use activity::ActivityMinute;

impl Tasklane {
    /// Tasks submitted and finished per minute over the last hour, cluster-wide.
    pub async fn activity(&self) -> Result<Vec<ActivityMinute>, ServiceError> {
        let client = self.connection().await?;
        Ok(activity::last_hour(store::client(&client)).await?)
    }
}
