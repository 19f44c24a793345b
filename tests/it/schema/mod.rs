//! The reference schema files (`sql/schema.sql`, `sql/functions/*.sql`) equal what the
//! migrations produce, and migrating is quiet.
//!
//! Migrations are forward-only history: a function's current body may sit in the
//! newest of several migrations. The reference files hold the current definition of
//! every object, generated from `pg_dump --schema-only` of a freshly migrated database
//! by the one normaliser in `render.rs`. When a migration changes the schema, this
//! test fails with a diff until the files are regenerated:
//!
//! ```text
//! TASKLANE_BLESS=1 cargo test --test it schema::
//! ```
//!
//! pg_dump is found the way `tasklane::devdb` finds the server binaries (PATH, then the
//! newest `/usr/lib/postgresql/*/bin`) and must be at least the server's version. The
//! committed files come from PostgreSQL 15; another server version may print some
//! definitions differently, which shows up as a diff here.

use crate::common;

mod diff;
mod notices;
mod render;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use render::{Source, FUNCTIONS_DIR, REGENERATE, SCHEMA_FILE};

#[tokio::test]
async fn reference_files_equal_what_the_migrations_produce() {
    let db = common::test_db().await;
    let client = db.client().await;
    let (major, pg_dump, dump) = dump_schema(&client, &db.url).await;
    let generated = render::render(&dump, major, &migration_sources());
    assert_covers_catalog(&client, &generated).await;

    let root = crate_root();
    if std::env::var_os("TASKLANE_BLESS").is_some_and(|v| v == "1") {
        bless(&root, &generated);
        return;
    }
    let mut paths: BTreeSet<String> = generated.keys().cloned().collect();
    paths.extend(committed_function_files(&root));
    let mut report = String::new();
    for path in paths {
        let committed = std::fs::read_to_string(root.join(&path)).ok();
        let wanted = generated.get(&path);
        match (committed.as_deref(), wanted) {
            (Some(old), Some(new)) if old == new => {}
            (old, new) => {
                let (old, new) = (old.unwrap_or(""), new.map_or("", String::as_str));
                report.push_str(&format!(
                    "--- {path} (committed{})\n+++ {path} (from the migrations)\n{}",
                    if old.is_empty() { ", missing" } else { "" },
                    diff::unified(old, new)
                ));
            }
        }
    }
    assert!(
        report.is_empty(),
        "the reference schema files differ from what the migrations produce:\n\n{report}\n\
         If the migrations are right, regenerate the files and commit them:\n\n    \
         {REGENERATE}\n\n(server: PostgreSQL {major}; pg_dump: {})",
        pg_dump.display()
    );
}

/// Runs pg_dump (at least the server's version) on the database at `url`; returns the
/// server's major version, pg_dump's path and its output.
async fn dump_schema(client: &tokio_postgres::Client, url: &str) -> (u32, PathBuf, String) {
    let version: String = client
        .query_one("SHOW server_version_num", &[])
        .await
        .expect("server version")
        .get(0);
    let major = version.parse::<u32>().expect("numeric server version") / 10_000;
    let pg_dump = tasklane::devdb::find_pg_dump(major).unwrap_or_else(|e| panic!("{e:#}"));
    let out = tokio::process::Command::new(&pg_dump)
        .args(["--schema-only", "--schema=tasklane", "--no-owner"])
        .args(["--no-tablespaces", "--dbname", url])
        .output()
        .await
        .unwrap_or_else(|e| panic!("run {}: {e}", pg_dump.display()));
    assert!(
        out.status.success(),
        "{} failed ({}): {}",
        pg_dump.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let dump = String::from_utf8(out.stdout).expect("pg_dump prints UTF-8");
    (major, pg_dump, dump)
}

/// Guards the normaliser: every function, relation and trigger the catalog has in the
/// tasklane schema is in the generated files, so a pg_dump format the splitter does
/// not understand fails here rather than bless an incomplete file.
async fn assert_covers_catalog(
    client: &tokio_postgres::Client,
    generated: &BTreeMap<String, String>,
) {
    let schema = &generated[SCHEMA_FILE];
    let names = |sql: &'static str| async move {
        let rows = client.query(sql, &[]).await.expect(sql);
        rows.iter()
            .map(|r| r.get::<_, String>(0))
            .collect::<Vec<_>>()
    };
    for function in names(
        "SELECT DISTINCT proname::text FROM pg_proc
         WHERE pronamespace = 'tasklane'::regnamespace",
    )
    .await
    {
        let path = format!("{FUNCTIONS_DIR}/{function}.sql");
        let text = generated.get(&path).map_or("", String::as_str);
        assert!(
            text.contains(&format!("FUNCTION tasklane.{function}(")),
            "{path} lacks tasklane.{function}"
        );
    }
    // Each function explains itself: its comment is its generated file's header.
    let undescribed = names(
        "SELECT p.oid::regprocedure::text FROM pg_proc p
         WHERE p.pronamespace = 'tasklane'::regnamespace
           AND coalesce(obj_description(p.oid, 'pg_proc'), '') = ''",
    )
    .await;
    assert!(
        undescribed.is_empty(),
        "functions without a COMMENT ON FUNCTION (add one in the migration that writes \
         them): {undescribed:?}"
    );
    for (function, comment) in client
        .query(
            "SELECT p.proname::text, obj_description(p.oid, 'pg_proc') FROM pg_proc p
             WHERE p.pronamespace = 'tasklane'::regnamespace",
            &[],
        )
        .await
        .expect("function comments")
        .iter()
        .map(|r| (r.get::<_, String>(0), r.get::<_, String>(1)))
    {
        let path = format!("{FUNCTIONS_DIR}/{function}.sql");
        let first = comment.lines().next().unwrap_or("").trim_end();
        assert!(
            generated[&path].contains(&format!("\n-- {first}\n")),
            "{path} lacks its comment's first line in its header: {first:?}"
        );
    }
    let relations =
        "SELECT relname::text FROM pg_class WHERE relnamespace = 'tasklane'::regnamespace
         UNION ALL
         SELECT tgname::text FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
         WHERE c.relnamespace = 'tasklane'::regnamespace AND NOT t.tgisinternal";
    for name in names(relations).await {
        let is_word = |(at, _): (usize, &str)| {
            let before = schema[..at].chars().next_back();
            let after = schema[at + name.len()..].chars().next();
            ![before, after]
                .into_iter()
                .any(|c| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_'))
        };
        assert!(
            schema.match_indices(name.as_str()).any(is_word),
            "{SCHEMA_FILE} lacks {name}"
        );
    }
}

/// The migrations in version order, each `.rs` migration followed by the files it
/// `include_str!`s (V4's SQL API lives in `sql/api/`).
fn migration_sources() -> Vec<Source> {
    let root = crate_root();
    let mut files: Vec<(u32, String)> = std::fs::read_dir(root.join("migrations"))
        .expect("read migrations/")
        .map(|e| {
            e.expect("migrations entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter_map(|name| {
            let version = name.strip_prefix('V')?.split("__").next()?.parse().ok()?;
            Some((version, format!("migrations/{name}")))
        })
        .collect();
    files.sort();
    let read = |path: String| {
        let text = std::fs::read_to_string(root.join(&path)).expect("read migration source");
        Source { path, text }
    };
    let mut sources = Vec::new();
    for (_, path) in files {
        let migration = read(path);
        let included: Vec<String> = migration
            .text
            .split("env!(\"CARGO_MANIFEST_DIR\"), \"/")
            .skip(1)
            .filter_map(|rest| rest.split('"').next().map(str::to_owned))
            .collect();
        sources.push(migration);
        sources.extend(included.into_iter().map(read));
    }
    sources
}

/// `sql/functions/*.sql` as committed, so a file for a dropped function is reported.
fn committed_function_files(root: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root.join(FUNCTIONS_DIR)) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".sql"))
        .map(|name| format!("{FUNCTIONS_DIR}/{name}"))
        .collect()
}

/// Writes the generated files and removes function files no longer generated.
fn bless(root: &Path, generated: &BTreeMap<String, String>) {
    for stale in committed_function_files(root) {
        if !generated.contains_key(&stale) {
            std::fs::remove_file(root.join(&stale)).expect("remove stale function file");
            eprintln!("removed {stale}");
        }
    }
    std::fs::create_dir_all(root.join(FUNCTIONS_DIR)).expect("create sql/functions");
    for (path, text) in generated {
        if std::fs::read_to_string(root.join(path)).ok().as_deref() != Some(text) {
            std::fs::write(root.join(path), text).expect("write reference file");
            eprintln!("wrote {path}");
        }
    }
}

fn crate_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A database a newer release already migrated (it has a version this binary lacks):
/// an older replica restarting during a rolling upgrade or a rollback still starts.
#[tokio::test]
async fn an_older_binary_starts_on_a_database_a_newer_release_migrated() {
    let db = common::test_db().await;
    let client = db.client().await;
    let newer = tasklane::store::migrate::latest_version() + 1;
    client
        .execute(
            "INSERT INTO tasklane_schema_history (version, name, applied_on, checksum) \
             SELECT $1, 'from_a_newer_release', applied_on, '0' \
             FROM tasklane_schema_history ORDER BY version DESC LIMIT 1",
            &[&newer],
        )
        .await
        .unwrap();
    tasklane::store::migrate::run(&db.url)
        .await
        .expect("migrate with a newer version applied");
    let current = tasklane::store::migrate::check_writable_and_current(&client)
        .await
        .is_ok();
    assert!(current, "and it is ready: the schema is at least its own");
}
