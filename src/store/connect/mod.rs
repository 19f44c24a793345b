//! Every connection tasklane opens to PostgreSQL starts here: the pools, LISTEN,
//! migrations, the CLI, the load generator and `devdb`. A [`Database`] is a parsed
//! database URL with its TLS policy (libpq's `sslmode` and `sslrootcert`, see
//! [`settings`]), its TCP settings ([`tcp`]) and a rustls connector ([`verify`]);
//! building one refuses bad settings before anything connects, and a failed connection
//! says which setting to look at. Sockets are opened here ([`socket`]) so that a
//! connection whose server stops answering is found and closed ([`watchdog`]); which
//! failures mean "the connection is lost" is decided in [`lost`].
//!
//! Error messages name hosts, ports and settings, never the URL: it may hold a
//! password.

pub mod lost;
mod pool;
pub mod sessions;
mod settings;
mod socket;
mod tcp;
mod verify;
mod watchdog;

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use rustls::CertificateError;
use tokio_postgres::config::Host;
use tokio_postgres::{Client, Connection};
use tokio_postgres_rustls::MakeRustlsConnect;

pub use pool::{close_idle, ConnectError, Manager, Pool, PoolError, Pooled, IDLE_CLOSE};
pub use settings::{RootCert, SslMode, TlsSettings};
pub use tcp::{Keepalive, TcpSettings};

/// How the claim pool's connections plan (`Database::claim_pool`; the plans tests run
/// the claims under this very string).
///
/// - Generic plans (`plan_cache_mode`): a claim's `LIMIT $3` is estimated at a tenth of
///   the backlog in a generic plan, so PostgreSQL's own choice would re-plan it for
///   every call, a sizable share of a drain's database CPU; the generic plan is the same
///   index scan in claim order.
/// - No bitmap scans: on a short queue (tasks claimed about as fast as they are
///   submitted) the planner prefers a bitmap scan of the claimable index and a sort. A
///   bitmap scan reads every entry the index holds, the dead ones of the tasks claimed
///   since the last vacuum included, visits their heap pages and never marks them dead,
///   so each claim pays for every recent claim: many heap pages per served type for a
///   handful of queued tasks. An index scan in claim order stops at the limit and marks
///   the dead entries it passes, so the next claim skips them. Sequential scans stay
///   allowed: a session setting also reaches the plans of the triggers a claim fires and
///   of the external claims, and with them off the external claim is many times slower.
pub const CLAIM_SESSION: &str =
    "SET plan_cache_mode = force_generic_plan; SET enable_bitmapscan = off";

/// What every pooled session of a direct connection sets, after its pool's own
/// settings: no just-in-time compilation. Compiling a plan costs 15-90 ms of the
/// server's CPU at every run (unnamed statements are planned, and so compiled, each
/// time), where tasklane's statements run in well under a millisecond; PostgreSQL
/// compiles any plan whose estimate passes `jit_above_cost`, and a plan that needs a
/// path its settings turn off (see [`CLAIM_SESSION`]) is estimated at 10^10. Behind a
/// pooler in transaction mode sessions set nothing: the functions that change planner
/// settings turn JIT off themselves, and the operator's guide advises the role's
/// `jit = off` for the rest.
pub const EVERY_SESSION: &str = "SET jit = off";

/// Set once any database of this process is reached through a pooler in transaction
/// mode, and never cleared: from then on no statement is kept prepared on a connection
/// (an unnamed statement is right on a direct connection too, only planned each time).
static UNNAMED_ONLY: AtomicBool = AtomicBool::new(false);

/// Whether statements must run unnamed only (see [`Database::behind_transaction_pooler`]).
pub fn unnamed_statements_only() -> bool {
    UNNAMED_ONLY.load(Ordering::Relaxed)
}

/// A database to connect to, TLS policy included. Cheap to clone.
#[derive(Clone)]
pub struct Database {
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
    settings: TlsSettings,
    tcp: TcpSettings,
    /// How long a statement of a pooled connection may run (none: unbounded).
    statement_timeout: Option<Duration>,
    /// Whether pooled connections may set their session (off behind a pooler in
    /// transaction mode, where a SET stays on a server connection others share).
    session_settings: bool,
}

/// How much longer than the statement timeout a connection may stay silent while it
/// owes an answer: the server's own cancel of a long statement comes first, with its
/// clear error, and the connection stays.
const SILENCE_BEYOND_STATEMENT: Duration = Duration::from_secs(2);

impl Database {
    /// Parses `url` (URL or key=value form) and builds its TLS connector. Refused: an
    /// unknown `sslmode`, an unreadable `sslrootcert` or one without a certificate,
    /// anything tokio-postgres cannot parse.
    pub fn from_url(url: &str) -> anyhow::Result<Database> {
        let split = settings::split(url).map_err(anyhow::Error::msg)?;
        let mut config: tokio_postgres::Config = split
            .rest
            .parse()
            .context("parse the database URL (the URL is not shown: it may hold a password)")?;
        config.ssl_mode(match split.tls.mode {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                tokio_postgres::config::SslMode::Require
            }
        });
        // As libpq: a Unix socket is never encrypted, whatever sslmode says.
        let all_sockets = !config.get_hosts().is_empty()
            && config
                .get_hosts()
                .iter()
                .all(|h| !matches!(h, Host::Tcp(_)));
        if all_sockets {
            config.ssl_mode(tokio_postgres::config::SslMode::Disable);
        }
        let tls = MakeRustlsConnect::new(verify::client_config(&split.tls)?);
        Ok(Database {
            config,
            tls,
            settings: split.tls,
            tcp: split.tcp,
            statement_timeout: None,
            session_settings: true,
        })
    }

    /// This database with statements of its pooled connections bounded by `timeout`:
    /// PostgreSQL cancels one that runs longer (`statement_timeout`) and ends a session
    /// idle that long inside a transaction, and a connection that then stays silent
    /// while it owes an answer is closed as gone. Connections made one by one
    /// ([`Database::connect`]: migrations, LISTEN) are not bounded: a migration may
    /// rightly run for minutes.
    pub fn with_statement_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.statement_timeout = timeout.filter(|t| !t.is_zero());
        self
    }

    /// This database reached through a pooler in transaction mode (PgBouncer): pooled
    /// connections set nothing on their session (no claim plans, no server-side
    /// timeouts; the answer watchdog still bounds a statement).
    pub fn behind_transaction_pooler(mut self) -> Self {
        self.session_settings = false;
        UNNAMED_ONLY.store(true, Ordering::Relaxed);
        self
    }

    /// The TLS settings in effect.
    pub fn tls_settings(&self) -> &TlsSettings {
        &self.settings
    }

    /// The TCP settings in effect.
    pub fn tcp_settings(&self) -> &TcpSettings {
        &self.tcp
    }

    /// One connection and its driver, for callers that poll the driver themselves
    /// (LISTEN reads notifications from it).
    pub async fn connect_with_driver(
        &self,
    ) -> anyhow::Result<(Client, Connection<socket::Stream, socket::TlsStream>)> {
        self.connect_watched(None).await
    }

    /// Like [`Database::connect_with_driver`], the connection closed once the server
    /// has sent nothing for `silence` while a statement waits for its answer.
    pub async fn connect_watched(
        &self,
        silence: Option<Duration>,
    ) -> anyhow::Result<(Client, Connection<socket::Stream, socket::TlsStream>)> {
        socket::connect(&self.config, &self.tcp, &self.tls, silence)
            .await
            .map_err(|error| self.explain(error))
    }

    /// One connection, its driver spawned on the runtime.
    pub async fn connect(&self) -> anyhow::Result<Client> {
        let (client, connection) = self.connect_with_driver().await?;
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "database connection ended");
            }
        });
        Ok(client)
    }

    /// A pool of up to `size` connections, each made like [`Database::connect`]'s and
    /// bounded by the statement timeout.
    pub fn pool(&self, size: usize) -> anyhow::Result<Pool> {
        self.build_pool(size, None)
            .context("build the connection pool")
    }

    /// A pool of up to `size` connections for the claim statements only, each set up
    /// with [`CLAIM_SESSION`]. Other statements keep the defaults: filters like
    /// `$5 IS NULL OR app = $5` need custom plans. Behind a pooler in transaction mode
    /// (where the SETs would stay on a server session other clients share) its
    /// connections set nothing, and each claim calls its variant's function, which
    /// makes the same settings for itself (its SET clauses).
    pub fn claim_pool(&self, size: usize) -> anyhow::Result<Pool> {
        self.build_pool(size, Some(CLAIM_SESSION))
            .context("build the claim connection pool")
    }

    fn build_pool(&self, size: usize, session: Option<&str>) -> anyhow::Result<Pool> {
        let mut setup: Vec<String> = session.map(str::to_owned).into_iter().collect();
        setup.push(EVERY_SESSION.to_owned());
        if let (Some(timeout), true) = (self.statement_timeout, self.session_settings) {
            setup.push(format!("SET statement_timeout = {}", timeout.as_millis()));
            // A transaction whose client vanished between two statements (a cut
            // network path) would hold its row locks until the server's TCP keepalive
            // gives up, hours by default, blocking whoever recovers its tasks.
            setup.push(format!(
                "SET idle_in_transaction_session_timeout = {}",
                timeout.as_millis()
            ));
        }
        let silence = self
            .statement_timeout
            .map(|timeout| timeout + SILENCE_BEYOND_STATEMENT);
        let setup = self.session_settings.then(|| setup.join("; "));
        let manager = Manager::new(self.clone(), setup, silence);
        Ok(Pool::builder(manager)
            .max_size(size)
            // The connection returned last goes out first: see `close_idle`.
            .queue_mode(deadpool::managed::QueueMode::Lifo)
            .runtime(deadpool::Runtime::Tokio1)
            .wait_timeout(pool::wait_timeout(self.statement_timeout))
            .build()?)
    }

    /// Context for a failed connection that points at the setting to change.
    fn explain(&self, error: anyhow::Error) -> anyhow::Error {
        let at = self.hosts();
        let mode = self.settings.mode;
        let what = match certificate_error(&error) {
            Some(CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. }) => format!(
                "the server's certificate does not name the host connected to ({at}); sslmode=verify-full checks the host name (use the name the certificate was issued for)"
            ),
            Some(CertificateError::Expired | CertificateError::NotValidYet) => format!(
                "the server's certificate at {at} is expired or not yet valid"
            ),
            Some(CertificateError::UnknownIssuer | CertificateError::BadSignature) => format!(
                "the server's certificate at {at} is not trusted: it does not chain to {} (sslmode={mode})",
                self.settings.describe_roots()
            ),
            Some(other) => format!(
                "the server's certificate at {at} was refused ({other:?}, sslmode={mode})"
            ),
            None if mode == SslMode::Disable && refused_plain(&error) => format!(
                "the server at {at} refused a connection without TLS (sslmode=disable); it wants sslmode=require or stronger"
            ),
            None => format!("connect to PostgreSQL at {at} (sslmode={mode})"),
        };
        error.context(what)
    }

    /// `host:port` of every host, for messages (never user or password).
    fn hosts(&self) -> String {
        let ports = self.config.get_ports();
        let mut out = String::new();
        for (i, host) in self.config.get_hosts().iter().enumerate() {
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            if i > 0 {
                out.push_str(", ");
            }
            let _ = match host {
                Host::Tcp(name) => write!(out, "{name}:{port}"),
                #[cfg(unix)]
                Host::Unix(path) => write!(out, "{}", path.display()),
            };
        }
        out
    }
}

/// Connects to `url` (see [`Database::from_url`]), driver spawned.
pub async fn connect(url: &str) -> anyhow::Result<Client> {
    Database::from_url(url)?.connect().await
}

/// The certificate problem rustls reported somewhere in `error`'s chain (tokio-rustls
/// wraps it in an io::Error, whose `source` skips it, hence `get_ref`).
fn certificate_error(error: &anyhow::Error) -> Option<CertificateError> {
    for e in error.chain() {
        let rustls_error = e.downcast_ref::<rustls::Error>().or_else(|| {
            e.downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        });
        if let Some(rustls::Error::InvalidCertificate(problem)) = rustls_error {
            return Some(problem.clone());
        }
    }
    None
}

/// pg_hba found no entry for the connection (SQLSTATE 28000), which with `hostssl`-only
/// rules is what a plain connection meets.
fn refused_plain(error: &anyhow::Error) -> bool {
    error
        .chain()
        .filter_map(|e| e.downcast_ref::<tokio_postgres::Error>())
        .any(|e| {
            e.code() == Some(&tokio_postgres::error::SqlState::INVALID_AUTHORIZATION_SPECIFICATION)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(url: &str) -> String {
        match Database::from_url(url) {
            Ok(_) => panic!("accepted"),
            Err(error) => format!("{error:#}"),
        }
    }

    #[test]
    fn bad_settings_are_refused_naming_the_setting_and_never_the_password() {
        let dir = std::env::temp_dir().join(format!("tasklane-connect-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let missing = dir.join("missing.pem");
        let cases = [
            (
                "postgres://u:hunter2@h/db?sslmode=verify".to_owned(),
                "sslmode",
            ),
            (
                format!(
                    "postgres://u:hunter2@h/db?sslmode=verify-full&sslrootcert={}",
                    missing.display()
                ),
                "missing.pem",
            ),
            (
                format!(
                    "host=h password=hunter2 sslmode=verify-ca sslrootcert={}",
                    empty.display()
                ),
                "holds no PEM certificate",
            ),
            ("postgres://u:hunter2@h:notaport/db".to_owned(), "URL"),
            ("postgres://u:hunter2@h/db?bogus=1".to_owned(), "URL"),
            ("postgres://u:hunter2%zz@[::1/db".to_owned(), "URL"),
            ("host=h password='hunter2".to_owned(), "unterminated"),
        ];
        for (url, want) in cases {
            let message = refused(&url);
            assert!(message.contains(want), "{message}");
            assert!(
                message.contains("ssl") || ["URL", "unterminated"].contains(&want),
                "{message}"
            );
            assert!(!message.contains("hunter2"), "{message}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn settings_reach_tokio_postgres_without_our_keys() {
        let db = Database::from_url(
            "postgres://u@h:6543/db?sslmode=verify-full&sslrootcert=system&application_name=x",
        )
        .unwrap();
        assert_eq!(db.tls_settings().mode, SslMode::VerifyFull);
        assert_eq!(db.config.get_application_name(), Some("x"));
        assert_eq!(
            db.config.get_ssl_mode(),
            tokio_postgres::config::SslMode::Require
        );
        assert_eq!(db.hosts(), "h:6543");
        let db = Database::from_url("host=/run/postgresql sslmode=require").unwrap();
        assert_eq!(
            db.config.get_ssl_mode(),
            tokio_postgres::config::SslMode::Disable,
            "sockets are never encrypted"
        );
    }
}
