//! A real PostgreSQL for tests and `tasklane dev`, with no setup by the developer.
//!
//! [`resolve_server`] uses `DATABASE_URL` when it answers, and otherwise starts a
//! private throwaway cluster ([`PrivateCluster`]) from the PostgreSQL binaries on this
//! machine. The module owns that cluster's whole life: where it lives (a
//! `tasklane-pg-<pid>-<random>` directory under the temp dir), who runs it, and how it
//! is removed. Two facts shape the design:
//!
//! - `initdb` and `postgres` refuse to run as root, and CI containers usually are root,
//!   so as root every cluster command runs through `runuser` as `postgres` (or
//!   `nobody`) and the directory is handed to that user.
//! - Test processes crash, get killed, and never drop their statics (the shared
//!   server of an integration-test binary lives in one). So a cluster is not cleaned
//!   up by `Drop` alone: a small watchdog process polls the owning pid and, once it is
//!   gone, stops the server and removes the directory. Whatever still slips through
//!   (a killed watchdog, a reboot-less container kill) is swept at the next start.
//!
//! [`databases`] adds what tests need on top of any server: a migrated template
//! database built once per schema and cheap copies of it per test; [`sweep`] removes
//! copies left behind by crashed runs and templates of old schemas, so nothing a
//! crashed run made outlives it. [`Replicated`] pairs a private cluster with a
//! synchronous streaming standby and fails over to it, for failover tests;
//! [`BlackHoleProxy`] stands between a client and a server to cut their traffic the way
//! a proxy that lost the server's side of its connections does.

mod black_hole;
mod cluster;
mod databases;
mod launcher;
mod pooler;
mod redact;
mod replicated;
mod sweep;

use std::time::Duration;

use anyhow::Context as _;

pub use black_hole::BlackHoleProxy;
pub use cluster::{ClusterOptions, PrivateCluster};
pub use databases::{
    create_database_from_template, drop_database, hold_template, prepare_template,
    url_with_database,
};
pub use launcher::find_pg_dump;
pub use pooler::Pooler;
pub use redact::redacted_url;
pub use replicated::{Failover, Replicated};
pub use sweep::{sweep_old_templates, sweep_stale_test_databases};

/// How long a given `DATABASE_URL` gets to answer before we fall back to a private
/// cluster: long enough for a local server under load, short enough that a stale
/// variable does not stall every test run.
const EXTERNAL_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// A PostgreSQL server that tests or `tasklane dev` can create databases on.
#[derive(Debug)]
pub enum Server {
    /// A server someone else runs (`DATABASE_URL`); we never stop it.
    External {
        /// The URL as given.
        url: String,
    },
    /// A throwaway cluster this process started; stopped and removed on drop, on
    /// [`Server::stop`], or by its watchdog when the process ends.
    Private(PrivateCluster),
}

impl Server {
    /// A URL for the server: the given one for `External`, the `postgres` database
    /// for `Private`.
    pub fn url(&self) -> &str {
        match self {
            Server::External { url } => url,
            Server::Private(cluster) => cluster.url(),
        }
    }

    /// Stops and removes a private cluster now; does nothing to an external server.
    pub async fn stop(self) {
        if let Server::Private(cluster) = self {
            cluster.stop().await;
        }
    }
}

/// Returns `database_url` if it accepts a connection within ~2 s, otherwise starts a
/// private cluster. Falling back instead of failing keeps `cargo test` working on a
/// laptop with a stale `DATABASE_URL`; the warning says so.
pub async fn resolve_server(database_url: Option<&str>) -> anyhow::Result<Server> {
    resolve_server_with(database_url, &ClusterOptions::default()).await
}

/// [`resolve_server`], with `options` for the private cluster it may start.
pub async fn resolve_server_with(
    database_url: Option<&str>,
    options: &ClusterOptions,
) -> anyhow::Result<Server> {
    if let Some(url) = database_url.map(str::trim).filter(|u| !u.is_empty()) {
        match check_reachable(url).await {
            Ok(()) => {
                return Ok(Server::External {
                    url: url.to_owned(),
                })
            }
            // The URL may hold a password, so it is not logged.
            Err(error) => tracing::warn!(
                error = format!("{error:#}"),
                "DATABASE_URL is unreachable; starting a private PostgreSQL cluster instead"
            ),
        }
    }
    let options = options.clone();
    let cluster = tokio::task::spawn_blocking(move || PrivateCluster::start_with(&options))
        .await
        .context("private cluster start task")??;
    Ok(Server::Private(cluster))
}

async fn check_reachable(url: &str) -> anyhow::Result<()> {
    let database = crate::store::connect::Database::from_url(url)?;
    let (client, connection) =
        tokio::time::timeout(EXTERNAL_CONNECT_TIMEOUT, database.connect_with_driver())
            .await
            .context("connect timed out")??;
    let connection = tokio::spawn(connection);
    let checked = client
        .simple_query("SELECT 1")
        .await
        .map(drop)
        .context("SELECT 1");
    drop(client);
    let _ = connection.await;
    checked
}

/// Whether `pid` names a live process on this machine. Used to tell leftovers of
/// crashed runs (whose names embed the owner's pid) from those of running ones.
pub(crate) fn pid_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    if std::path::Path::new("/proc/self").exists() {
        return std::path::Path::new("/proc").join(pid.to_string()).exists();
    }
    std::process::Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(true) // cannot tell: keep the leftover rather than break a live run
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn private_cluster_serves_templates_and_cleans_up() {
        let server = resolve_server(None).await.expect("start private cluster");
        let dir = match &server {
            Server::Private(cluster) => cluster.dir().to_owned(),
            Server::External { .. } => panic!("no URL given, expected a private cluster"),
        };
        assert!(dir.exists());
        let url = server.url().to_owned();

        let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        let conn = tokio::spawn(conn);
        let one: i32 = client.query_one("SELECT 1", &[]).await.unwrap().get(0);
        assert_eq!(one, 1);

        let template = format!("devdb_tmpl_{}", std::process::id());
        prepare_template(&url, &template, |tmpl_url| async move {
            let (c, conn) = tokio_postgres::connect(&tmpl_url, tokio_postgres::NoTls).await?;
            tokio::spawn(conn);
            c.batch_execute("CREATE TABLE marker (id int); INSERT INTO marker VALUES (42)")
                .await?;
            Ok(())
        })
        .await
        .expect("prepare template");
        // A second call finds the template and does not run the migration again.
        prepare_template(&url, &template, |_| async {
            anyhow::bail!("must not run twice")
        })
        .await
        .expect("template reused");

        let copy = format!("devdb_copy_{}_0", std::process::id());
        let copy_url = create_database_from_template(&url, &template, &copy)
            .await
            .unwrap();
        let (c, copy_conn) = tokio_postgres::connect(&copy_url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(copy_conn);
        let v: i32 = c
            .query_one("SELECT id FROM marker", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(v, 42);

        // Dropped while `c` is still connected: WITH (FORCE) must cope.
        drop_database(&url, &copy).await.unwrap();
        let exists = |name: String| {
            let client = &client;
            async move {
                client
                    .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&name])
                    .await
                    .unwrap()
                    .is_some()
            }
        };
        assert!(!exists(copy.clone()).await);

        // A copy "owned" by a dead pid is swept; ours is kept.
        let dead = dead_pid();
        let stale = format!("devdb_copy_{dead}_7");
        let ours = format!("devdb_copy_{}_1", std::process::id());
        create_database_from_template(&url, &template, &stale)
            .await
            .unwrap();
        create_database_from_template(&url, &template, &ours)
            .await
            .unwrap();
        let swept = sweep_stale_test_databases(&url, "devdb_copy")
            .await
            .unwrap();
        assert_eq!(swept, 1);
        assert!(!exists(stale).await);
        assert!(exists(ours.clone()).await);

        // Templates of other schemas: dropped unless in use (a use lock, or a build).
        let old = |suffix: &str| format!("devdb_tmpl_old{suffix}");
        for name in [old("1"), old("2"), old("3_build")] {
            create_database_from_template(&url, &template, &name)
                .await
                .unwrap();
        }
        let user = hold_template(&url, &old("2")).await.unwrap();
        let sweep = || sweep_old_templates(&url, "devdb_tmpl", &template, "devdb_copy");
        // While another process's test database has a session, nothing is dropped
        // (harnesses older than the use lock take none).
        let (running, running_conn) =
            tokio_postgres::connect(&url_with_database(&url, &ours), tokio_postgres::NoTls)
                .await
                .unwrap();
        let running_conn = tokio::spawn(running_conn);
        assert_eq!(sweep().await.unwrap(), 0);
        drop(running);
        let _ = running_conn.await;
        wait_no_sessions(&client, &ours).await;
        assert_eq!(sweep().await.unwrap(), 2);
        assert!(!exists(old("1")).await && !exists(old("3_build")).await);
        assert!(exists(old("2")).await, "held in use");
        assert!(exists(template.clone()).await, "the kept template");
        drop(user);
        let mut swept = 0;
        // 500 × 20 ms: 10 s at least, for a loaded machine.
        for _ in 0..500 {
            swept = sweep().await.unwrap();
            if swept == 1 {
                break;
            }
            // The lock goes when the server notices the closed session.
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(swept, 1, "dropped once no longer held");
        assert!(!exists(old("2")).await);

        drop(client);
        let _ = conn.await;
        server.stop().await;
        assert!(!dir.exists(), "cluster dir {} still exists", dir.display());
    }

    /// Waits (bounded) until no session is connected to `name`: a closed client's
    /// backend exits a moment later.
    async fn wait_no_sessions(client: &tokio_postgres::Client, name: &str) {
        // 500 × 20 ms: 10 s at least, for a loaded machine.
        for _ in 0..500 {
            let row = client
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = $1",
                    &[&name],
                )
                .await
                .unwrap();
            if row.get::<_, i64>(0) == 0 {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        panic!("sessions on {name} remain");
    }

    #[test]
    fn url_with_database_replaces_only_the_path() {
        let cases = [
            ("postgres://u:p@h:5432/old", "postgres://u:p@h:5432/new"),
            (
                "postgres://u@h/old?sslmode=disable",
                "postgres://u@h/new?sslmode=disable",
            ),
            ("postgresql://h", "postgresql://h/new"),
            (
                "postgres://h?application_name=x",
                "postgres://h/new?application_name=x",
            ),
            ("postgres://[::1]:5432/", "postgres://[::1]:5432/new"),
            ("host=h user=u dbname=old", "host=h user=u dbname=new"),
        ];
        for (input, want) in cases {
            assert_eq!(url_with_database(input, "new"), want, "input {input}");
        }
    }

    /// A pid that was just used and is now free (reuse within the test is unlikely).
    pub(super) fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!pid_alive(pid));
        pid
    }
}
