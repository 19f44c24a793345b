//! The raw-SQL baseline: pgbench (shipped with PostgreSQL) running the minimal
//! claim/complete scripts of `benches/pgbench/` against a bare table on the same server
//! at the same moment, so each tasklane figure can be read as a share of what
//! PostgreSQL itself does here. Jobs/s is counted from the rows actually completed, not
//! from pgbench's tps, so running out of queued rows cannot inflate it.

use std::path::PathBuf;
use std::process::Command;

use anyhow::Context;

/// One pgbench script run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Baseline {
    pub script: &'static str,
    pub clients: u32,
    pub seconds: u32,
    pub jobs_per_second: f64,
}

/// The pgbench binary: `PGBENCH`, else PostgreSQL 15's, else `pgbench` on the PATH.
pub fn binary() -> PathBuf {
    if let Ok(path) = std::env::var("PGBENCH") {
        return path.into();
    }
    let pg15 = PathBuf::from("/usr/lib/postgresql/15/bin/pgbench");
    if pg15.exists() {
        pg15
    } else {
        "pgbench".into()
    }
}

/// Loads `rows` queued jobs into a fresh bare table in the database at `url`, runs
/// `script` (`claim_one` or `claim_50`) with `clients` for `seconds`, and counts.
pub async fn run(
    url: &str,
    script: &'static str,
    rows: i64,
    clients: u32,
    seconds: u32,
) -> anyhow::Result<Baseline> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/pgbench");
    let client = super::connect(url).await?;
    client
        .batch_execute(&std::fs::read_to_string(dir.join("setup.sql"))?)
        .await?;
    client
        .execute(
            "INSERT INTO bare_jobs (payload) SELECT '{}' FROM generate_series(1, $1::bigint)",
            &[&rows],
        )
        .await?;
    client.batch_execute("VACUUM ANALYZE bare_jobs").await?;
    let done = "SELECT count(*) FROM bare_jobs WHERE state = 'done'";
    pgbench(url, script, rows, clients, seconds, &client, done).await
}

/// tasklane's own claim and settle statements under pgbench (`tasklane_100.sql`) on a
/// migrated database at `url` holding `rows` queued `noop` tasks.
pub async fn tasklane_sql(
    url: &str,
    rows: i64,
    clients: u32,
    seconds: u32,
) -> anyhow::Result<Baseline> {
    let client = super::connect(url).await?;
    tasklane::load::drain::enqueue(&client, "pgbench", "noop", rows, &serde_json::json!({}))
        .await?;
    client
        .batch_execute("VACUUM ANALYZE tasklane.tasks, tasklane.task_queue")
        .await?;
    let done = "SELECT count(*) FROM tasklane.tasks WHERE state = 'succeeded'";
    pgbench(url, "tasklane_100", rows, clients, seconds, &client, done).await
}

async fn pgbench(
    url: &str,
    script: &'static str,
    rows: i64,
    clients: u32,
    seconds: u32,
    client: &tokio_postgres::Client,
    done: &str,
) -> anyhow::Result<Baseline> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/pgbench");
    let url = url.to_owned();
    let path = dir.join(format!("{script}.sql"));
    let output = tokio::task::spawn_blocking(move || {
        Command::new(binary())
            .args([
                "-n",
                "-c",
                &clients.to_string(),
                "-j",
                &clients.min(2).to_string(),
                "-T",
                &seconds.to_string(),
            ])
            .arg("-f")
            .arg(&path)
            .arg(&url)
            .output()
    })
    .await?
    .context("run pgbench")?;
    anyhow::ensure!(
        output.status.success(),
        "pgbench failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let done: i64 = client.query_one(done, &[]).await?.get(0);
    anyhow::ensure!(
        done < rows,
        "pgbench ran out of queued rows: load more than {rows}"
    );
    Ok(Baseline {
        script,
        clients,
        seconds,
        jobs_per_second: done as f64 / seconds as f64,
    })
}
