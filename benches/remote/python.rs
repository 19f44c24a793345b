//! One Python worker process (the client's `Worker`, `concurrency` 64, a no-op
//! handler: `benches/remote/python_worker.py`) drains `BENCH_PY_TASKS` (20,000) queued
//! `remote` tasks through one replica, timed as the drain bench times a drain. The
//! client is installed as scripts/test-clients.sh installs it: the pinned venv of
//! `scripts/lib/clients-venv.sh`, the package from `clients/python`. Besides tasks/s,
//! the worker process's CPU per task (the client's own cost, where a Python worker
//! tops out) and the whole PostgreSQL server's.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context;
use tasklane::load::drain;
use tasklane::load::fleet::{self, Fleet};

use crate::common;

/// What one Python drain measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Figures {
    pub tasks_per_second: f64,
    pub worker_cpu_ms_per_task: f64,
    pub postgres_cpu_ms_per_task: f64,
}

impl std::fmt::Display for Figures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.0} tasks/s, Python worker {:.3} CPU ms/task, PostgreSQL {:.3} CPU ms/task",
            self.tasks_per_second, self.worker_cpu_ms_per_task, self.postgres_cpu_ms_per_task
        )
    }
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The Python of the pinned clients venv, installed if missing (as the client tests do).
pub fn python() -> anyhow::Result<PathBuf> {
    let output = Command::new("bash")
        .arg("-c")
        .arg("source scripts/lib/clients-venv.sh && ensure_clients_venv >&2 && echo \"$CLIENTS_VENV\"")
        .current_dir(root())
        .stderr(Stdio::inherit())
        .output()
        .context("run scripts/lib/clients-venv.sh")?;
    anyhow::ensure!(
        output.status.success(),
        "the clients venv could not be installed"
    );
    let venv = String::from_utf8(output.stdout)?.trim().to_owned();
    Ok(PathBuf::from(venv).join("bin/python"))
}

/// One drain of `tasks` remote tasks by one Python worker of `concurrency`.
pub async fn drain(
    bench: &common::Bench,
    python: &Path,
    tasks: i64,
    concurrency: usize,
) -> anyhow::Result<Figures> {
    let (name, url) = bench.fresh_db().await?;
    let outcome = async {
        let mut client = common::connect(&url).await?;
        let mut spec = bench.fleet(&url, 1, &common::serve_args());
        spec.http_base_port = Some(common::free_ports(1)?);
        let fleet = Fleet::start(&spec, &client).await?;
        let token = common::create_token(&bench.bin, &url, "drain", "work")?;
        let mut worker = Command::new(python)
            .arg(root().join("benches/remote/python_worker.py"))
            .args([&spec.http_urls()[0], &token, &concurrency.to_string()])
            .env("PYTHONPATH", root().join("clients/python"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .context("start the Python worker")?;
        let mut ready = String::new();
        BufReader::new(worker.stdout.take().context("stdout")?).read_line(&mut ready)?;
        anyhow::ensure!(
            ready.trim() == "ready",
            "the Python worker did not start: {ready:?}"
        );
        let backlog = drain::queue_of(&mut client, &fleet, "drain", "remote", tasks).await?;
        let cpu_before = fleet::cpu_seconds(worker.id()).unwrap_or(0.0);
        let drained = backlog.release(&mut client, &fleet).await;
        let cpu = fleet::cpu_seconds(worker.id()).unwrap_or(0.0) - cpu_before;
        // Its stdin closed, the worker stops.
        drop(worker.stdin.take());
        let stopped = worker.wait()?;
        fleet.stop();
        let drained = drained?;
        anyhow::ensure!(stopped.success(), "the Python worker ended with {stopped}");
        anyhow::ensure!(
            drained.broken == 0,
            "{} tasks were not worked exactly once",
            drained.broken
        );
        Ok(Figures {
            tasks_per_second: drained.tasks_per_second,
            worker_cpu_ms_per_task: cpu * 1000.0 / tasks as f64,
            postgres_cpu_ms_per_task: drained.postgres_server_cpu_ms_per_task.unwrap_or(f64::NAN),
        })
    }
    .await;
    bench.drop_db(&name).await?;
    outcome
}
