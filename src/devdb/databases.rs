//! Databases for tests on any server: one migrated template per schema, held in use by
//! the processes copying from it, and a cheap copy of it per test (`CREATE DATABASE
//! ... TEMPLATE`). Copying a template costs milliseconds; migrating per test would cost
//! the whole migration chain every time.

use std::future::Future;
use std::time::Duration;

use anyhow::{bail, Context as _};
use tokio_postgres::error::SqlState;
use tokio_postgres::Client;

/// First key of the advisory lock that serialises template builds (the second is a
/// hash of the template name); an arbitrary constant ("tl" + "db").
pub(super) const TEMPLATE_LOCK_CLASS: i32 = 0x746c_6462;
/// First key of the shared advisory lock a process holds on a template it copies from
/// ([`hold_template`]); the sweep of old templates takes it exclusively ("tl" + "us").
pub(super) const TEMPLATE_USE_CLASS: i32 = 0x746c_7573;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// PostgreSQL truncates identifiers beyond 63 bytes; a silently truncated name would
/// make two templates collide.
const MAX_IDENTIFIER_LEN: usize = 63;
pub(super) const BUILD_SUFFIX: &str = "_build";

/// Creates database `template_name` on the server at `server_url` and runs `migrate`
/// on it (given the template's URL), unless it already exists.
///
/// Safe to call from many test processes at once: the build runs under a session
/// advisory lock taken on `server_url`'s own database, so it happens once and the
/// others wait and then find it. The migration runs on `<template>_build`, renamed
/// only after it succeeds, so a run that crashes mid-migration never leaves a
/// half-built template under the real name. On return no connection to the template
/// remains and new ones are refused (`ALLOW_CONNECTIONS false`), since any connection
/// to it makes `CREATE DATABASE ... TEMPLATE` fail.
pub async fn prepare_template<F, Fut>(
    server_url: &str,
    template_name: &str,
    migrate: F,
) -> anyhow::Result<()>
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    if template_name.len() + BUILD_SUFFIX.len() > MAX_IDENTIFIER_LEN {
        bail!("template name {template_name:?} is too long");
    }
    let admin = connect(server_url).await?;
    lock(&admin, TEMPLATE_LOCK_CLASS, template_name, false).await?;
    let built = build_template(&admin, server_url, template_name, migrate).await;
    // Closing the session would release the lock too; unlock explicitly so waiters
    // proceed without depending on when the connection task notices.
    let _ = unlock(&admin, TEMPLATE_LOCK_CLASS, template_name).await;
    built
}

/// Takes a shared "in use" lock on `template_name` in a session of its own and returns
/// that session: while it lives, [`super::sweep_old_templates`] leaves the template
/// alone. A template has no sessions of its own (`ALLOW_CONNECTIONS false`), so this
/// lock is how a process that copies from it says so. Take it before
/// [`prepare_template`], and keep the client, and the runtime driving its connection,
/// for as long as copies may be made.
///
/// Advisory locks belong to one database: processes sharing a server must give the
/// same database in `server_url` (as for the build lock).
pub async fn hold_template(server_url: &str, template_name: &str) -> anyhow::Result<Client> {
    let session = connect(server_url).await?;
    lock(&session, TEMPLATE_USE_CLASS, template_name, true).await?;
    Ok(session)
}

// The session advisory locks on a template, keyed (class, hashtext(name)) in one place
// so that builders, users and the sweep always agree on the key.

/// Waits for lock `class` on template `name`, shared or exclusive.
async fn lock(client: &Client, class: i32, name: &str, shared: bool) -> anyhow::Result<()> {
    let sql = if shared {
        "SELECT pg_advisory_lock_shared($1, hashtext($2))"
    } else {
        "SELECT pg_advisory_lock($1, hashtext($2))"
    };
    client
        .execute(sql, &[&class, &name])
        .await
        .context("take template lock")?;
    Ok(())
}

/// Takes lock `class` on template `name` exclusively if it is free; never waits.
pub(super) async fn try_lock(client: &Client, class: i32, name: &str) -> anyhow::Result<bool> {
    let row = client
        .query_one(
            "SELECT pg_try_advisory_lock($1, hashtext($2))",
            &[&class, &name],
        )
        .await
        .context("try template lock")?;
    Ok(row.get(0))
}

/// Releases one exclusive hold of lock `class` on template `name`.
pub(super) async fn unlock(client: &Client, class: i32, name: &str) -> anyhow::Result<()> {
    client
        .execute(
            "SELECT pg_advisory_unlock($1, hashtext($2))",
            &[&class, &name],
        )
        .await
        .context("release template lock")?;
    Ok(())
}

async fn build_template<F, Fut>(
    admin: &Client,
    server_url: &str,
    template_name: &str,
    migrate: F,
) -> anyhow::Result<()>
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    if database_exists(admin, template_name).await? {
        return Ok(());
    }
    let build = format!("{template_name}{BUILD_SUFFIX}");
    // A leftover from a run that crashed while holding the lock.
    admin
        .batch_execute(&format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            quote_ident(&build)
        ))
        .await
        .context("drop leftover template build")?;
    admin
        .batch_execute(&format!("CREATE DATABASE {}", quote_ident(&build)))
        .await
        .context("create template build database")?;
    if let Err(error) = migrate(url_with_database(server_url, &build)).await {
        let _ = drop_database(server_url, &build).await;
        return Err(error.context(format!("migrate template database {template_name}")));
    }
    disconnect_all(admin, &build).await?;
    admin
        .batch_execute(&format!(
            "ALTER DATABASE {build} RENAME TO {template}; \
             ALTER DATABASE {template} WITH ALLOW_CONNECTIONS false",
            build = quote_ident(&build),
            template = quote_ident(template_name),
        ))
        .await
        .context("publish template database")?;
    Ok(())
}

/// Waits for connections to `name` to go away (the migration's pool and connection
/// tasks close asynchronously), then terminates any that linger.
async fn disconnect_all(admin: &Client, name: &str) -> anyhow::Result<()> {
    const POLL: Duration = Duration::from_millis(50);
    const TERMINATE_AT: usize = 60; // ~3 s of waiting
    for attempt in 0..200 {
        let row = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = $1",
                &[&name],
            )
            .await
            .context("count template connections")?;
        if row.get::<_, i64>(0) == 0 {
            return Ok(());
        }
        if attempt == TERMINATE_AT {
            admin
                .execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1",
                    &[&name],
                )
                .await
                .context("terminate template connections")?;
        }
        tokio::time::sleep(POLL).await;
    }
    bail!("connections to {name} remain after the migration")
}

/// Creates `new_name` as a copy of `template_name` and returns its URL.
///
/// Retries while PostgreSQL reports the template "being accessed by other users": a
/// connection that is closing (or a concurrent `prepare_template` check) can still be
/// counted for a moment.
pub async fn create_database_from_template(
    server_url: &str,
    template_name: &str,
    new_name: &str,
) -> anyhow::Result<String> {
    const ATTEMPTS: u32 = 10;
    let admin = connect(server_url).await?;
    let sql = format!(
        "CREATE DATABASE {} TEMPLATE {}",
        quote_ident(new_name),
        quote_ident(template_name)
    );
    for attempt in 1..=ATTEMPTS {
        match admin.batch_execute(&sql).await {
            Ok(()) => return Ok(url_with_database(server_url, new_name)),
            Err(error) if error.code() == Some(&SqlState::OBJECT_IN_USE) && attempt < ATTEMPTS => {
                tokio::time::sleep(Duration::from_millis(100 * u64::from(attempt))).await;
            }
            Err(error) => {
                return Err(error)
                    .with_context(|| format!("create database {new_name} from {template_name}"))
            }
        }
    }
    unreachable!("the last attempt returns")
}

/// Drops database `name` if it exists, disconnecting its sessions (`WITH (FORCE)`,
/// PostgreSQL 13+): a test's pool may still hold connections when it is dropped.
pub async fn drop_database(server_url: &str, name: &str) -> anyhow::Result<()> {
    let admin = connect(server_url).await?;
    admin
        .batch_execute(&format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            quote_ident(name)
        ))
        .await
        .with_context(|| format!("drop database {name}"))
}

/// `url` with its database replaced by `database`, keeping user, host, port and query
/// parameters. Accepts the URL form (`postgres://...`) and the key-value form
/// (`host=... dbname=...`) that tokio-postgres also parses.
pub fn url_with_database(url: &str, database: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        let mut parts: Vec<String> = url
            .split_whitespace()
            .filter(|part| !part.starts_with("dbname="))
            .map(str::to_owned)
            .collect();
        parts.push(format!("dbname={database}"));
        return parts.join(" ");
    };
    let rest = &url[scheme_end..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let query = rest[authority_end..]
        .find('?')
        .map_or("", |i| &rest[authority_end + i..]);
    format!(
        "{}{}/{database}{query}",
        &url[..scheme_end],
        &rest[..authority_end]
    )
}

async fn database_exists(admin: &Client, name: &str) -> anyhow::Result<bool> {
    let row = admin
        .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&name])
        .await
        .context("look up database")?;
    Ok(row.is_some())
}

pub(super) async fn connect(url: &str) -> anyhow::Result<Client> {
    tokio::time::timeout(CONNECT_TIMEOUT, crate::store::connect::connect(url))
        .await
        .context("connect to PostgreSQL timed out")?
}

pub(super) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
