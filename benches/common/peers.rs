//! The peers measured in the same run as tasklane: Graphile Worker in its fastest mode
//! (a local queue and batched completion) and pg-boss (batched fetch), each draining the
//! same number of no-op jobs on a fresh database of the same server. They are Node
//! programs in benches/peers/ (installed by benches/peers/setup.sh, Node 22 included);
//! a run without them says how to install them and reports tasklane alone.

use std::path::{Path, PathBuf};

use anyhow::Context;

/// A peer system and how it is driven.
#[derive(Debug, Clone, Copy)]
pub enum Peer {
    /// `concurrency` 64, `localQueue.size` 200, completions batched.
    GraphileWorker,
    /// 4 workers fetching batches of 200, continuously while batches come back full.
    PgBoss,
}

impl Peer {
    pub const ALL: [Peer; 2] = [Peer::GraphileWorker, Peer::PgBoss];

    pub fn name(self) -> &'static str {
        match self {
            Peer::GraphileWorker => {
                "Graphile Worker 0.18 (localQueue 200, batched completion, concurrency 64)"
            }
            Peer::PgBoss => "pg-boss 12.38 (batch 200, 4 workers)",
        }
    }

    fn script(self) -> (&'static str, [&'static str; 2]) {
        match self {
            Peer::GraphileWorker => ("graphile.mjs", ["64", "200"]),
            Peer::PgBoss => ("pgboss.mjs", ["200", "4"]),
        }
    }
}

/// One peer drain, as its script printed it.
#[derive(Debug, Clone, serde::Deserialize, serde::Serialize)]
pub struct PeerRun {
    pub system: String,
    pub jobs: i64,
    pub seconds: f64,
    pub jobs_per_second: f64,
    pub enqueue_per_second: f64,
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

/// Drains `jobs` no-op jobs with `peer` on the (fresh) database at `url`.
pub async fn drain(peer: Peer, url: &str, jobs: i64) -> anyhow::Result<PeerRun> {
    let (script, args) = peer.script();
    let output = tokio::process::Command::new(dir().join("node_modules/.bin/node"))
        .arg(dir().join(script))
        .arg(url)
        .arg(jobs.to_string())
        .args(args)
        .current_dir(dir())
        .kill_on_drop(true)
        .output()
        .await
        .with_context(|| format!("run {script}"))?;
    anyhow::ensure!(
        output.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .with_context(|| format!("{script} printed no result: {stdout}"))?;
    let run: PeerRun = serde_json::from_str(line)?;
    anyhow::ensure!(
        run.jobs == jobs,
        "{script} drained {} of {jobs} jobs",
        run.jobs
    );
    Ok(run)
}
