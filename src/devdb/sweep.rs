//! Sweeps of test databases left behind: copies whose run crashed before dropping them
//! ([`sweep_stale_test_databases`]), and templates of schemas no longer tested
//! ([`sweep_old_templates`]); every schema change builds a new template and would
//! otherwise leave the old one forever. Both are cautious: a database that may still be
//! in use is kept (the next sweep gets it), and no drop is forced.

use anyhow::Context as _;
use tokio_postgres::Client;

use super::databases::{
    connect, quote_ident, try_lock, unlock, BUILD_SUFFIX, TEMPLATE_LOCK_CLASS, TEMPLATE_USE_CLASS,
};
use super::pid_alive;

/// Drops databases named `<prefix>_<pid>_<n>` whose pid is not a live process on this
/// machine: leftovers of test runs that crashed before dropping them. Returns how many
/// were dropped.
///
/// A database with open sessions is left alone and the drop is not forced: on a
/// server shared with other machines (or pid namespaces) a "dead" pid may belong to a
/// run elsewhere, and its databases are in use; a crashed run's sessions are gone.
pub async fn sweep_stale_test_databases(server_url: &str, prefix: &str) -> anyhow::Result<usize> {
    let admin = connect(server_url).await?;
    let rows = admin
        .query(
            "SELECT d.datname FROM pg_database d \
             WHERE starts_with(d.datname, $1) \
               AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.datname = d.datname)",
            &[&format!("{prefix}_")],
        )
        .await
        .context("list test databases")?;
    let mut dropped = 0;
    for row in rows {
        let name: String = row.get(0);
        let Some(owner) = owner_pid(&name, prefix) else {
            continue;
        };
        if pid_alive(owner) {
            continue;
        }
        if drop_quietly(&admin, &name).await {
            dropped += 1;
        }
    }
    Ok(dropped)
}

/// Drops the templates `<template_prefix>_*` other than `keep` (and leftover `_build`
/// databases of them) that no process uses, and returns how many it dropped.
///
/// A template never has sessions (`ALLOW_CONNECTIONS false`), so "unused" cannot be
/// read from `pg_stat_activity`, and a plain `DROP DATABASE` would succeed under a test
/// binary of another checkout that is about to copy from it. Instead:
/// - a process copying from a template holds a shared use lock on it
///   ([`super::hold_template`]); the sweep drops a template only while it can take
///   that lock exclusively, so a user starting later waits for the drop and then
///   rebuilds the template, and one already holding it keeps it;
/// - one being built is skipped (its build lock is held);
/// - harnesses older than the use lock take none: while any session is open on a
///   test database `<test_prefix>_*` (another test process is running), nothing is
///   dropped at all.
///
/// Failures to drop are ignored (logged at debug): the next run's sweep tries again.
pub async fn sweep_old_templates(
    server_url: &str,
    template_prefix: &str,
    keep: &str,
    test_prefix: &str,
) -> anyhow::Result<usize> {
    let admin = connect(server_url).await?;
    let busy = admin
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE starts_with(datname, $1))",
            &[&format!("{test_prefix}_")],
        )
        .await
        .context("look for running tests")?;
    if busy.get::<_, bool>(0) {
        return Ok(0);
    }
    let rows = admin
        .query(
            "SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY datname",
            &[&format!("{template_prefix}_")],
        )
        .await
        .context("list template databases")?;
    let mut dropped = 0;
    for row in rows {
        let name: String = row.get(0);
        let template = name.strip_suffix(BUILD_SUFFIX).unwrap_or(&name);
        if template == keep {
            continue;
        }
        if drop_unused_template(&admin, &name, template).await? {
            dropped += 1;
        }
    }
    Ok(dropped)
}

/// Drops `name` (template `template` or its build) under both of the template's locks,
/// taken without waiting; false when either is held or the drop fails.
async fn drop_unused_template(admin: &Client, name: &str, template: &str) -> anyhow::Result<bool> {
    let mut dropped = false;
    if try_lock(admin, TEMPLATE_LOCK_CLASS, template).await? {
        if try_lock(admin, TEMPLATE_USE_CLASS, template).await? {
            dropped = drop_quietly(admin, name).await;
            unlock(admin, TEMPLATE_USE_CLASS, template).await?;
        }
        unlock(admin, TEMPLATE_LOCK_CLASS, template).await?;
    }
    Ok(dropped)
}

/// `DROP DATABASE IF EXISTS`, not forced: a database someone is connected to stays.
async fn drop_quietly(admin: &Client, name: &str) -> bool {
    let sql = format!("DROP DATABASE IF EXISTS {}", quote_ident(name));
    match admin.batch_execute(&sql).await {
        Ok(()) => true,
        Err(error) => {
            tracing::debug!(database = %name, %error, "could not drop a leftover test database");
            false
        }
    }
}

/// The pid in `<prefix>_<pid>_<n>`, if `name` has exactly that shape.
fn owner_pid(name: &str, prefix: &str) -> Option<u32> {
    let rest = name.strip_prefix(prefix)?.strip_prefix('_')?;
    let (pid, n) = rest.split_once('_')?;
    n.parse::<u64>().ok()?;
    pid.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_pid_parses_only_exact_shape() {
        assert_eq!(owner_pid("tasklane_test_123_4", "tasklane_test"), Some(123));
        assert_eq!(owner_pid("tasklane_test_123", "tasklane_test"), None);
        assert_eq!(owner_pid("tasklane_test_x_4", "tasklane_test"), None);
        assert_eq!(owner_pid("tasklane_tmpl_123_4", "tasklane_test"), None);
        assert_eq!(owner_pid("tasklane_test_1_2_3", "tasklane_test"), None);
    }
}
