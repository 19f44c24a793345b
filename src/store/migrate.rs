//! Schema migrations (refinery, files in `migrations/`), run under an advisory lock on a
//! dedicated connection so replicas starting together migrate exactly once.

use crate::store::Statements;
use anyhow::Context;

use super::connect::sessions::{self, Sessions};

mod embedded {
    refinery::embed_migrations!("migrations");
}

/// Arbitrary fixed key of the migration lock ("tlmigrat").
const MIGRATION_LOCK: i64 = 0x746c_6d69_6772_6174;

/// The table refinery records applied migrations in.
const HISTORY_TABLE: &str = "tasklane_schema_history";

/// Applies every pending migration to the database at `database_url`.
pub async fn run(database_url: &str) -> anyhow::Result<()> {
    let database = super::connect::Database::from_url(database_url)?;
    // Through a pooler in transaction mode the lock below would be taken on a server
    // session the pooler lends to others next, and kept there.
    if sessions::probe(&database).await? == Sessions::Shared {
        anyhow::bail!(
            "the database URL reaches PostgreSQL through a pooler in transaction mode \
             (PgBouncer), and migrations need a session of their own: set \
             --direct-database-url (TASKLANE_DIRECT_DATABASE_URL) to a URL that bypasses \
             the pooler, or run `tasklane migrate` against the database directly and \
             start with --no-migrate"
        );
    }
    let (mut client, connection) = database
        .connect_with_driver()
        .await
        .context("connect to migrate")?;
    let driver = tokio::spawn(connection);
    // refinery creates its history table with IF NOT EXISTS, so every start on a
    // migrated database would draw a NOTICE ("relation ... already exists, skipping"),
    // which the driver logs. Notices from migrations are routine; warnings and errors
    // still reach us.
    client
        .batch_execute("SET client_min_messages = warning")
        .await
        .context("quiet migration notices")?;
    client
        .run("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
        .await
        .context("take the migration lock")?;
    // A database migrated by a newer release has versions this binary lacks; that is
    // a rolling upgrade or a rollback in progress, not an error: the newer schema still
    // runs every statement of the previous release (the compatibility policy in
    // docs/architecture.md), so an older pod that restarts must start.
    let result = embedded::migrations::runner()
        .set_abort_missing(false)
        .set_migration_table_name(HISTORY_TABLE)
        .run_async(&mut client)
        .await
        .context("apply migrations");
    // Closing the connection releases the session lock even if the unlock fails.
    let _ = client
        .run("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK])
        .await;
    drop(client);
    let _ = driver.await;
    result.map(|_| ())
}

/// The newest migration version this binary knows.
pub fn latest_version() -> i32 {
    embedded::migrations::runner()
        .get_migrations()
        .iter()
        .map(|m| m.version())
        .max()
        .unwrap_or(0)
}

/// Whether the server takes writes and the database has every migration of this
/// binary (readiness); why not otherwise.
pub async fn check_writable_and_current<C: tokio_postgres::GenericClient + Sync>(
    client: &C,
) -> Result<(), String> {
    let sql = format!(
        "SELECT coalesce(max(version), 0), current_setting('transaction_read_only')::bool \
         FROM {HISTORY_TABLE}"
    );
    let row = client
        .row(sql.as_str(), &[])
        .await
        .map_err(|error| match error.code() {
            Some(code) => format!("the database refused the check (SQLSTATE {})", code.code()),
            None => format!("the database connection failed ({error})"),
        })?;
    if row.get::<_, bool>(1) {
        return Err("the server is read-only (a standby, or writes are switched off)".into());
    }
    let version = row.get::<_, i32>(0);
    match version >= latest_version() {
        true => Ok(()),
        false => Err(format!(
            "the schema is at version {version}, this binary needs {}",
            latest_version()
        )),
    }
}
