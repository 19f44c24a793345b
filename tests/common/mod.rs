//! Harness for integration tests: every test gets its own migrated database.
//!
//! The first [`test_db`] call in a test binary resolves a server (`DATABASE_URL` if
//! it answers, else a private cluster, see `tasklane::devdb`), sweeps databases left
//! by crashed runs, and builds a template database migrated to the current schema
//! (`tasklane_tmpl_<hash of the schema>`), unless another process already has; then it
//! drops the templates of other schemas that no process uses. Every test gets a copy
//! of the template (milliseconds) named `tasklane_test_<pid>_<n>`, dropped when its
//! [`TestDb`] is dropped.
//!
//! Each `#[tokio::test]` runs on its own runtime, which dies with the test, so the
//! one-time setup runs on a dedicated thread with its own runtime and the server is
//! kept in a static: a private cluster lives as long as the process, and its
//! watchdog removes it after the process exits (statics are never dropped). Likewise
//! the session holding the template's use lock lives on a thread of its own until the
//! process exits, so no other process's sweep drops the template under this one.

#![allow(dead_code)] // each test binary uses a different part of the harness

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use sha2::{Digest, Sha256};
use tasklane::devdb::{self, Server};
use tasklane::store::Pool;

/// Prefix of per-test database names; the sweep matches `<prefix>_<pid>_<n>`.
const TEST_DB_PREFIX: &str = "tasklane_test";
/// Prefix of template database names, `<prefix>_<hash>`.
const TEMPLATE_PREFIX: &str = "tasklane_tmpl";
/// Directories (relative to the crate root) whose contents define the schema; a
/// change to any file there yields a new template name, hence a fresh template.
const SCHEMA_INPUTS: &[&str] = &["migrations", "sql/api"];
/// Connections in a [`TestDb`]'s pool; concurrency tests can build a larger one
/// with [`pool`].
const DEFAULT_POOL_SIZE: usize = 16;

struct Shared {
    server: Server,
    template: String,
}

static SHARED: OnceLock<Result<Shared, String>> = OnceLock::new();
static NEXT_DB: AtomicU64 = AtomicU64::new(0);

/// A fresh database with the current schema, private to one test.
pub struct TestDb {
    /// URL of this test's database.
    pub url: String,
    /// A pool of [`DEFAULT_POOL_SIZE`] connections to it.
    pub pool: Pool,
    name: String,
}

impl TestDb {
    /// The database's name (`tasklane_test_<pid>_<n>`).
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for TestDb {
    /// Drops the database. Drop cannot await and the test's runtime may be shutting
    /// down, so a short-lived thread with its own runtime does it; `WITH (FORCE)`
    /// disconnects whatever the pool still holds. Errors are ignored: the next run's
    /// sweep removes anything left.
    fn drop(&mut self) {
        self.pool.close();
        let server_url = server_url();
        let name = std::mem::take(&mut self.name);
        let dropper = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime
                .block_on(devdb::drop_database(&server_url, &name))
                .ok()
        });
        let _ = dropper.join();
    }
}

/// Creates a database for one test: a copy of the migrated template, with a pool.
pub async fn test_db() -> TestDb {
    let template = shared_setup().await.template.clone();
    db_from(&template).await
}

/// Creates an empty database for one test (a copy of `template0`: no tasklane schema),
/// for tests of what happens before or during a migration.
pub async fn empty_db() -> TestDb {
    db_from("template0").await
}

/// The process-wide setup (server and template), made by the first caller. The first
/// call blocks for a few seconds; that stays off the test's runtime thread.
async fn shared_setup() -> &'static Shared {
    tokio::task::spawn_blocking(shared)
        .await
        .expect("test database setup thread")
}

/// A database named for this process and test, copied from `template`, with a pool.
async fn db_from(template: &str) -> TestDb {
    let shared = shared_setup().await;
    let name = format!(
        "{TEST_DB_PREFIX}_{}_{}",
        std::process::id(),
        NEXT_DB.fetch_add(1, Ordering::Relaxed)
    );
    let url = devdb::create_database_from_template(shared.server.url(), template, &name)
        .await
        .unwrap_or_else(|e| panic!("create test database {name}: {e:#}"));
    let pool = pool(&url, DEFAULT_POOL_SIZE);
    TestDb { url, pool, name }
}

/// URL of the server the test databases live on, for tests that create databases
/// of their own. Blocks for the one-time setup if no test has run it yet.
pub fn server_url() -> String {
    shared().server.url().to_owned()
}

/// A pool of up to `size` connections to `url`, made as a replica makes its pool.
pub fn pool(url: &str, size: usize) -> Pool {
    tasklane::store::connect::Database::from_url(url)
        .expect("valid database url")
        .pool(size)
        .expect("build pool")
}

fn shared() -> &'static Shared {
    SHARED
        .get_or_init(|| {
            std::thread::Builder::new()
                .name("tasklane-test-db-setup".into())
                .spawn(setup)
                .expect("spawn setup thread")
                .join()
                .unwrap_or_else(|_| Err("test database setup panicked".into()))
        })
        .as_ref()
        .unwrap_or_else(|e| panic!("test database setup failed: {e}"))
}

/// Runs on its own thread and runtime; nothing it starts needs that runtime later.
fn setup() -> Result<Shared, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("build setup runtime: {e}"))?;
    runtime
        .block_on(async {
            let database_url = std::env::var("DATABASE_URL").ok();
            let server = devdb::resolve_server(database_url.as_deref()).await?;
            devdb::sweep_stale_test_databases(server.url(), TEST_DB_PREFIX).await?;
            let template = template_name()?;
            hold_template(server.url(), &template).await?;
            devdb::prepare_template(server.url(), &template, |url| async move {
                tasklane::store::migrate::run(&url).await
            })
            .await?;
            devdb::sweep_old_templates(server.url(), TEMPLATE_PREFIX, &template, TEST_DB_PREFIX)
                .await?;
            anyhow::Ok(Shared { server, template })
        })
        .map_err(|e| format!("{e:#}"))
}

/// Holds `template`'s use lock (see `devdb::hold_template`) until the process exits, on
/// a thread and runtime of its own; returns once the lock is held.
async fn hold_template(server_url: &str, template: &str) -> anyhow::Result<()> {
    let (held, holding) = tokio::sync::oneshot::channel();
    let (server_url, template) = (server_url.to_owned(), template.to_owned());
    std::thread::Builder::new()
        .name("tasklane-test-template-use".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(error) => return drop(held.send(Err(error.into()))),
            };
            runtime.block_on(async move {
                match devdb::hold_template(&server_url, &template).await {
                    Ok(_session) => {
                        let _ = held.send(Ok(()));
                        std::future::pending::<()>().await;
                    }
                    Err(error) => drop(held.send(Err(error))),
                }
            })
        })?;
    holding.await?
}

/// `<TEMPLATE_PREFIX>_<hash>`, the hash covering the names and contents of every file
/// under [`SCHEMA_INPUTS`].
fn template_name() -> anyhow::Result<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut hasher = Sha256::new();
    for input in SCHEMA_INPUTS {
        hash_tree(&mut hasher, root, &root.join(input))?;
    }
    let digest = hasher.finalize();
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("{TEMPLATE_PREFIX}_{hex}"))
}

fn hash_tree(hasher: &mut Sha256, root: &Path, dir: &Path) -> anyhow::Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    let mut paths: Vec<_> = entries
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    paths.sort();
    for path in paths {
        if path.is_dir() {
            hash_tree(hasher, root, &path)?;
            continue;
        }
        let relative = path.strip_prefix(root).unwrap_or(&path);
        let contents = std::fs::read(&path)?;
        // Length-prefixed so no two different trees hash the same byte stream.
        for part in [relative.to_string_lossy().as_bytes(), &contents[..]] {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
    }
    Ok(())
}

pub mod api;
pub mod fixtures;
pub mod in_process;
pub mod serve;
pub mod service;
pub mod tls_cluster;
pub mod wait;

pub use wait::eventually;

impl TestDb {
    /// A dedicated connection (not from the pool), for tests that drive transactions
    /// by hand; its driver runs on the test's runtime.
    pub async fn client(&self) -> tokio_postgres::Client {
        let (client, connection) = tokio_postgres::connect(&self.url, tokio_postgres::NoTls)
            .await
            .expect("connect to the test database");
        tokio::spawn(connection);
        client
    }
}

/// A REPEATABLE READ transaction on `client` that has taken its snapshot (at its first
/// statement): while it is open, no row deleted or updated after it can be removed by
/// vacuum, as under a long `pg_dump` or a forgotten transaction.
pub async fn hold_snapshot(client: &mut tokio_postgres::Client) -> tokio_postgres::Transaction<'_> {
    let held = client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .start()
        .await
        .expect("begin a REPEATABLE READ transaction");
    held.execute("SELECT 1", &[])
        .await
        .expect("take the snapshot");
    held
}
