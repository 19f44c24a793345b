//! The peers measured in the same run as tasklane: Graphile Worker in its fastest mode
//! (a local queue and batched completion) and pg-boss (batched fetch, LISTEN/NOTIFY
//! wake-ups), each draining the same number of no-op jobs on a fresh database of the
//! same server, timed as tasklane is: workers started and idle first, the backlog queued
//! in one open transaction, the clock from its commit to the last job gone. They are
//! Node programs in benches/peers/ (installed by benches/peers/setup.sh, Node 22
//! included); a run without them says how to install them and reports tasklane alone.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::Context;
use tasklane::load::wal::{Counters, WalUse};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

/// A peer system and how it is driven.
#[derive(Debug, Clone, Copy)]
pub enum Peer {
    /// `concurrency` 64, `localQueue.size` 200, completions batched.
    GraphileWorker,
    /// 4 workers fetching batches of 200, continuously while batches come back full,
    /// woken by the queue's NOTIFY (`useListenNotify`, queue `notify`).
    PgBoss,
}

impl Peer {
    pub const ALL: [Peer; 2] = [Peer::GraphileWorker, Peer::PgBoss];

    pub fn name(self) -> &'static str {
        match self {
            Peer::GraphileWorker => {
                "Graphile Worker 0.18 (localQueue 200, batched completion, concurrency 64)"
            }
            Peer::PgBoss => "pg-boss 12.38 (batch 200, 4 workers, notify)",
        }
    }

    fn script(self) -> (&'static str, [&'static str; 2]) {
        match self {
            Peer::GraphileWorker => ("graphile.mjs", ["64", "200"]),
            Peer::PgBoss => ("pgboss.mjs", ["200", "4"]),
        }
    }
}

/// One peer drain, as its script printed it, with what it wrote to the WAL.
#[derive(Debug, Clone, serde::Deserialize, serde::Serialize)]
pub struct PeerRun {
    pub system: String,
    pub jobs: i64,
    /// From the commit that made the backlog visible to the last job gone.
    pub seconds: f64,
    /// From that commit to the first job in a handler (the wake-up).
    pub first_job_seconds: f64,
    pub jobs_per_second: f64,
    pub enqueue_per_second: f64,
    /// Measured here, not printed by the script.
    #[serde(skip_deserializing, default)]
    pub wal: Option<WalUse>,
    /// The same WAL by relation, when `BENCH_WALDUMP=1` asked for it.
    #[serde(skip_deserializing, default)]
    pub wal_by_relation: Vec<super::waldump::Share>,
}

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers")
}

/// Whether the peers are installed (`BENCH_PEERS=0` turns them off).
pub fn available() -> bool {
    if std::env::var("BENCH_PEERS").as_deref() == Ok("0") {
        return false;
    }
    let node = dir().join("node_modules/.bin/node");
    if !node.exists() {
        println!(
            "peers: not installed; run benches/peers/setup.sh to measure Graphile Worker and pg-boss in the same run"
        );
        return false;
    }
    true
}

/// Drains `jobs` no-op jobs with `peer` on the (fresh) database at `url`, sampling the
/// WAL counters (after a checkpoint) between the script's enqueue (its workers already
/// idle, the jobs not yet committed) and its drain, and again once its sessions have
/// left.
pub async fn drain(peer: Peer, url: &str, jobs: i64) -> anyhow::Result<PeerRun> {
    let (script, args) = peer.script();
    let mut child = tokio::process::Command::new(dir().join("node_modules/.bin/node"))
        .arg(dir().join(script))
        .arg(url)
        .arg(jobs.to_string())
        .args(args)
        .current_dir(dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("run {script}"))?;
    let client = super::connect(url).await?;
    let mut stdin = child.stdin.take().context("the script's stdin")?;
    let mut lines = BufReader::new(child.stdout.take().context("the script's stdout")?).lines();
    let mut wal_start = None;
    let mut result = None;
    while let Some(line) = lines.next_line().await? {
        if line.trim() == "queued" {
            wal_start = Some(Counters::start(&client).await?);
            stdin.write_all(b"go\n").await?;
            stdin.flush().await?;
        } else if line.starts_with('{') {
            result = Some(line);
        }
    }
    let output = child.wait_with_output().await?;
    anyhow::ensure!(
        output.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let line = result.with_context(|| format!("{script} printed no result"))?;
    let mut run: PeerRun = serde_json::from_str(&line)?;
    anyhow::ensure!(
        run.jobs == jobs,
        "{script} drained {} of {jobs} jobs",
        run.jobs
    );
    let wal_start = wal_start.with_context(|| format!("{script} never said \"queued\""))?;
    run.wal = Some(wal_start.finish(&client, jobs).await?);
    if super::waldump::wanted() {
        run.wal_by_relation = super::waldump::by_relation(&client, &wal_start).await?;
        super::waldump::print(peer.name(), &run.wal_by_relation, jobs);
    }
    Ok(run)
}
