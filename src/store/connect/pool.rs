//! The connection pools: deadpool over connections made by [`Database`] (so every
//! pooled connection has the TCP settings and the answer watchdog), a session set up
//! once per connection, and a way to stop reusing every connection a pool holds when
//! one of them shows that they are all likely gone or wrong: one found closed, or its
//! server found read-only after a failover (the others were made to the same server).
//!
//! A pool hands out the connection returned last (LIFO), so the few that steady work
//! needs stay in use, and [`close_idle`] closes the others once they have gone unused
//! for [`IDLE_CLOSE`]: those opened for a burst, or by a replica's services that all
//! take one at the same instant when it starts. An idle replica then holds what its
//! loops use, not its high-water mark.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use deadpool::managed::{Metrics, RecycleError, RecycleResult};
use deadpool_postgres::ClientWrapper;
use tokio_util::sync::CancellationToken;

use super::Database;

/// A pool of connections to one database.
pub type Pool = deadpool::managed::Pool<Manager>;
/// A connection taken from a [`Pool`]; back to the pool when dropped.
pub type Pooled = deadpool::managed::Object<Manager>;
/// Why no connection could be had from a [`Pool`].
pub type PoolError = deadpool::managed::PoolError<ConnectError>;

/// Why a new connection could not be made; its `Display` names the host and the
/// setting to look at, never the URL, and its `source` is the cause (a refusal of
/// PostgreSQL's, with its SQLSTATE, is found along it).
#[derive(Debug)]
pub struct ConnectError(pub anyhow::Error);

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl ConnectError {
    /// PostgreSQL's refusal, when the server refused (too many connections, starting
    /// up, a bad password).
    pub fn postgres(&self) -> Option<&tokio_postgres::Error> {
        self.0.chain().find_map(|e| e.downcast_ref())
    }
}

/// Makes and recycles a pool's connections.
pub struct Manager {
    database: Database,
    /// Statements every new connection runs first (session settings).
    session: Option<String>,
    /// How long a connection may stay silent while it owes an answer.
    silence: Option<Duration>,
    /// Connections made before this instant are not handed out again.
    forget_before: Mutex<Option<Instant>>,
}

impl Manager {
    pub(super) fn new(
        database: Database,
        session: Option<String>,
        silence: Option<Duration>,
    ) -> Self {
        Manager {
            database,
            session,
            silence,
            forget_before: Mutex::new(None),
        }
    }

    /// Stops handing out the connections made until now: each is closed when it is next
    /// taken (one in use finishes its statement first). New ones are made as needed.
    pub fn forget_connections(&self) {
        *self.forget_before.lock().expect("not poisoned") = Some(Instant::now());
    }

    fn forgotten(&self, metrics: &Metrics) -> bool {
        self.forget_before
            .lock()
            .expect("not poisoned")
            .is_some_and(|before| metrics.created <= before)
    }
}

impl deadpool::managed::Manager for Manager {
    type Type = ClientWrapper;
    type Error = ConnectError;

    async fn create(&self) -> Result<ClientWrapper, ConnectError> {
        let (client, connection) = self
            .database
            .connect_watched(self.silence)
            .await
            .map_err(ConnectError)?;
        let driver = tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "database connection ended");
            }
        });
        // Dropping the wrapper aborts the driver, which closes the socket.
        let client = ClientWrapper::new(client, driver);
        if let Some(session) = &self.session {
            client.batch_execute(session).await.map_err(|error| {
                ConnectError(anyhow::Error::new(error).context("set up the session"))
            })?;
        }
        Ok(client)
    }

    async fn recycle(
        &self,
        client: &mut ClientWrapper,
        metrics: &Metrics,
    ) -> RecycleResult<ConnectError> {
        if client.is_closed() {
            // What closed it (a cut network path, a restart, a failover) has most
            // likely closed the connections made beside it, or will: each found only
            // when a statement waits on it in vain. Made again now, they cost a
            // connect each instead.
            self.forget_connections();
            return Err(RecycleError::message("the connection closed"));
        }
        if self.forgotten(metrics) {
            return Err(RecycleError::message(
                "the connection was made to a server found read-only or gone",
            ));
        }
        Ok(())
    }
}

/// How long a caller waits for a pooled connection before its request fails, when
/// every connection is busy: longer than any statement may run, so a wait ends only
/// when connections are stuck, not merely busy.
pub fn wait_timeout(statement_timeout: Option<Duration>) -> Option<Duration> {
    statement_timeout.map(|timeout| timeout * 2)
}

/// How long a pooled connection may go unused before [`close_idle`] closes it: long
/// enough that a steady load keeps every connection it uses (each is taken again within
/// seconds), and well under the idle timeouts of NAT gateways and load balancers
/// (350 s on AWS), so a connection left at the bottom of the LIFO queue is closed here
/// before the path drops it silently.
pub const IDLE_CLOSE: Duration = Duration::from_secs(60);

/// Closes the connections of `pool` unused for `idle` or longer, looking every half of
/// it, until `shutdown`. New ones are made when work needs them.
pub async fn close_idle(pool: Pool, idle: Duration, shutdown: CancellationToken) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(idle / 2) => {}
            _ = shutdown.cancelled() => return,
        }
        let closed = pool
            .retain(|_, metrics| metrics.last_used() < idle)
            .removed
            .len();
        if closed > 0 {
            tracing::debug!(closed, "closed pooled connections left unused");
        }
    }
}
