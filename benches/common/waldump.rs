//! What a drain wrote to the WAL, by relation: `pg_waldump` over the WAL range of the
//! drain (from the sample after its checkpoint to now), each record counted against the
//! relation of its first block (records without one, commits above all, against their
//! resource manager), the relations named from the drained database's catalog.
//!
//! `BENCH_WALDUMP=1` turns it on. It reads the server's `pg_wal` directory, so only for a
//! server on this machine whose files this user can read (the bench's own cluster, or a
//! local one as root), and it must run before the next checkpoint recycles the segments.

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::Context;
use tasklane::load::wal::Counters;
use tokio::io::{AsyncBufReadExt as _, BufReader};

/// Whether `BENCH_WALDUMP=1` asked for the breakdown.
pub fn wanted() -> bool {
    std::env::var("BENCH_WALDUMP").as_deref() == Ok("1")
}

/// One relation's (or resource manager's) share of a WAL range.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Share {
    pub name: String,
    pub records: u64,
    pub bytes: u64,
    pub full_page_images: u64,
}

/// The pg_waldump binary: `PG_WALDUMP`, else PostgreSQL 15's, else the PATH's.
fn binary() -> PathBuf {
    if let Ok(path) = std::env::var("PG_WALDUMP") {
        return path.into();
    }
    let pg15 = PathBuf::from("/usr/lib/postgresql/15/bin/pg_waldump");
    if pg15.exists() {
        pg15
    } else {
        "pg_waldump".into()
    }
}

/// The WAL from `start` to now on the server `client` is connected to, by relation of
/// the connected database, largest first.
pub async fn by_relation(
    client: &tokio_postgres::Client,
    start: &Counters,
) -> anyhow::Result<Vec<Share>> {
    let row = client
        .query_one(
            "SELECT current_setting('data_directory'), pg_current_wal_lsn()::text,
                    (SELECT oid FROM pg_database WHERE datname = current_database())::int8",
            &[],
        )
        .await?;
    let (data, end, db): (String, String, i64) = (row.get(0), row.get(1), row.get(2));
    let names: HashMap<String, String> = client
        .query(
            "SELECT pg_relation_filenode(c.oid)::text, n.nspname || '.' || c.relname
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE pg_relation_filenode(c.oid) IS NOT NULL",
            &[],
        )
        .await?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    // Streamed: a drain of 200,000 tasks is millions of lines.
    let mut child = tokio::process::Command::new(binary())
        .arg("-p")
        .arg(PathBuf::from(data).join("pg_wal"))
        .args(["-s", &start.lsn(), "-e", &end])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("run pg_waldump")?;
    let mut lines = BufReader::new(child.stdout.take().context("pg_waldump's stdout")?).lines();
    let mut shares: HashMap<String, Share> = HashMap::new();
    while let Some(line) = lines.next_line().await? {
        let Some((name, bytes, fpi)) = parse(&line, db, &names) else {
            continue;
        };
        let share = shares.entry(name.clone()).or_insert_with(|| Share {
            name,
            ..Share::default()
        });
        share.records += 1;
        share.bytes += bytes;
        share.full_page_images += fpi;
    }
    let output = child.wait_with_output().await?;
    anyhow::ensure!(
        output.status.success(),
        "pg_waldump: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut shares: Vec<Share> = shares.into_values().collect();
    shares.sort_by_key(|s| std::cmp::Reverse(s.bytes));
    Ok(shares)
}

/// (whom a record is counted against, its total length, its full-page images) from one
/// line of pg_waldump's output.
fn parse(line: &str, db: i64, names: &HashMap<String, String>) -> Option<(String, u64, u64)> {
    let rmgr = line.strip_prefix("rmgr: ")?.split_whitespace().next()?;
    let total = line
        .split("len (rec/tot):")
        .nth(1)?
        .split(',')
        .next()?
        .split('/')
        .nth(1)?
        .trim()
        .parse()
        .ok()?;
    let fpi = line.matches(" FPW").count() as u64;
    let desc = line.split("desc: ").nth(1).unwrap_or("");
    let kind = desc.split_whitespace().next().unwrap_or("");
    let rel = line
        .split("blkref #0: rel ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next());
    let name = match rel.map(|r| r.split('/').collect::<Vec<_>>()) {
        Some(parts) if parts.len() == 3 && parts[1] == db.to_string() => names
            .get(parts[2])
            .cloned()
            .unwrap_or_else(|| format!("relfilenode {}", parts[2])),
        Some(_) => "(other databases)".to_owned(),
        None => format!("{rmgr} {kind}"),
    };
    Some((name, total, fpi))
}

/// Prints `shares` per task as a table, under `title`.
pub fn print(title: &str, shares: &[Share], tasks: i64) {
    let per = |v: u64| v as f64 / tasks.max(1) as f64;
    let total: u64 = shares.iter().map(|s| s.bytes).sum();
    println!();
    println!(
        "WAL by relation, {title} ({:.0} B/task in all):",
        per(total)
    );
    println!("| relation or record | bytes/task | records/task | FPI/task | share |");
    println!("|---|---|---|---|---|");
    for s in shares.iter().take(16) {
        println!(
            "| {} | {:.0} | {:.2} | {:.3} | {:.0}% |",
            s.name,
            per(s.bytes),
            per(s.records),
            per(s.full_page_images),
            100.0 * s.bytes as f64 / total.max(1) as f64
        );
    }
}
