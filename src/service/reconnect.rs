//! Running an operation again on a fresh connection when its connection was lost: which
//! failures count, and why each is safe to run again, is decided in
//! `store::connect::lost`. Only operations whose statements are fenced or only read use
//! this: a submit (its key finds a first run's task), a lease's heartbeat, an attempt's
//! settlement or hand-back (its lease token refuses a second one), and the reads most
//! callers wait on: the token lookup every request starts with, and a task's read. A failover, a
//! switchover's read-only moment or a connection cut then costs these operations a wait,
//! never a failed task or an error to a caller that a second later would have succeeded.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use super::{ServiceError, Tasklane};
use crate::store::connect::lost::{self, Lost};
use crate::telemetry::outage;

/// How long an operation keeps trying fresh connections: long enough for a managed
/// PostgreSQL's failover (seconds to tens of seconds), short of a lease's expiry.
const TRY_FOR: Duration = Duration::from_secs(20);
/// The first wait before running again; it doubles up to [`LONGEST_WAIT`].
const FIRST_WAIT: Duration = Duration::from_millis(50);
const LONGEST_WAIT: Duration = Duration::from_secs(1);

impl Tasklane {
    /// Runs `operation` (named `what` in logs) until it succeeds, fails for another
    /// reason than a lost connection, or [`TRY_FOR`] has passed. When the server was
    /// found read-only, the connections made to it so far are not used again.
    pub(super) async fn again_on_fresh_connection<T, F, Fut>(
        &self,
        what: &'static str,
        mut operation: F,
    ) -> Result<T, ServiceError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, ServiceError>>,
    {
        let started = Instant::now();
        let mut wait = FIRST_WAIT;
        loop {
            let error = match operation().await {
                Ok(value) => {
                    outage::answered();
                    return Ok(value);
                }
                Err(error) => error,
            };
            let Some(how) = error.lost() else {
                return Err(error);
            };
            if started.elapsed() + wait > TRY_FOR {
                return Err(error);
            }
            if error.wrong_server() {
                self.pool.manager().forget_connections();
                self.claims.manager().forget_connections();
            }
            // One line per outage, not per operation: a cut network path fails every
            // operation in flight.
            tracing::debug!(
                operation = what,
                unanswered = how == Lost::Unanswered,
                "the connection is lost or its server refused it (read-only, shutting down, too many connections); running the operation again on a fresh connection, for up to 20 s"
            );
            outage::failed(what, &error, error.sqlstate());
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(LONGEST_WAIT);
        }
    }
}

impl ServiceError {
    /// Whether this error means the connection was lost (see `store::connect::lost`).
    fn lost(&self) -> Option<Lost> {
        match self {
            ServiceError::Db(error) => lost::lost(error),
            // No connection could be made: the operation never reached a server.
            ServiceError::Unreachable(_) => Some(Lost::Refused),
            _ => None,
        }
    }

    fn wrong_server(&self) -> bool {
        matches!(self, ServiceError::Db(error) if lost::wrong_server(error))
    }
}
