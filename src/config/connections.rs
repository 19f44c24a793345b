//! What a replica connects to and how many connections it holds: the database URL's
//! direct counterpart behind a pooler, and the connection formula the chart and the
//! docs size `max_connections` by.

use super::{Role, ServeConfig};

impl ServeConfig {
    /// Connections of the claim pool: two per claim loop (its local claims and the
    /// routed external ones beside them) and two for remote workers' claims.
    pub fn claim_pool_size(&self) -> usize {
        self.claimers.max(1) * 2 + 2
    }

    /// The most connections this replica holds at once, by what holds them. Pools open
    /// connections as they are needed and close those unused for a minute, so an idle
    /// replica holds fewer; a start holds one more for a moment (migrations, or the
    /// check of one connection with `--no-migrate`), before any other is opened.
    pub fn connections(&self) -> Connections {
        let listen = |holds: bool| usize::from(self.listen_notify && holds);
        Connections {
            pool: self.pool_size,
            claims: self.claim_pool_size(),
            // Work wake-ups (a worker's, or an API's serving claim long polls), task
            // events (the API's waits and streams), webhook wake-ups (maintenance).
            listens: listen(self.has(Role::Worker) || self.has(Role::Api))
                + listen(self.has(Role::Api))
                + listen(self.has(Role::Maintenance)),
            // The queue sampler's session, which holds its election lock.
            sampler: usize::from(self.has(Role::Maintenance)),
        }
    }

    /// The URL of connections that need a session of their own (migrations, LISTEN,
    /// session advisory locks): the direct one if set, else the database URL.
    pub fn session_url(&self) -> &str {
        self.direct_database_url
            .as_deref()
            .filter(|url| !url.trim().is_empty())
            .unwrap_or(&self.database_url)
    }

    /// Whether the database URL goes through a pooler in transaction mode: a direct
    /// URL beside it says so, and so does `--listen-notify false` (the setting for a
    /// pooler with no direct URL).
    pub fn behind_pooler(&self) -> bool {
        self.session_url() != self.database_url || !self.listen_notify
    }
}

/// The connections a replica holds at most (see [`ServeConfig::connections`]). Size
/// PostgreSQL's `max_connections` for the sum over every replica, plus a rolling
/// update's surge, plus what else connects (migrations, the CLI, monitoring).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connections {
    /// The main pool (`--pool-size`).
    pub pool: usize,
    /// The claim pool.
    pub claims: usize,
    /// One LISTEN each.
    pub listens: usize,
    pub sampler: usize,
}

impl Connections {
    pub fn total(&self) -> usize {
        self.pool + self.claims + self.listens + self.sampler
    }
}
