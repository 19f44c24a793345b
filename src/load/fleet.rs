//! A fleet of `tasklane serve` replica processes on one database, started by the load
//! generator or a benchmark: each is a real process (its own runtime, pool and LISTEN
//! connection), so the figures include everything a deployment pays, and its memory
//! can be read from `/proc`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::task::types_file::DEMO_TASK_TYPES;

/// How to start the replicas.
#[derive(Debug, Clone)]
pub struct FleetSpec {
    /// The `tasklane` binary.
    pub bin: PathBuf,
    pub database_url: String,
    /// The task-types file every replica loads.
    pub task_types: PathBuf,
    pub replicas: usize,
    /// Extra `serve` flags (`--concurrency 256`, ...), given to every replica.
    pub serve_args: Vec<String>,
    /// When set, replica n listens on 127.0.0.1:(port + n) (the HTTP API with the
    /// default roles; `/metrics` and the probes with any).
    pub http_base_port: Option<u16>,
    /// The roles of every replica (`--roles`); by default `api,worker,maintenance` with
    /// `http_base_port`, else `worker,maintenance`.
    pub roles: Option<String>,
}

impl FleetSpec {
    /// Base URLs of the replicas' HTTP APIs (empty without `http_base_port`).
    pub fn http_urls(&self) -> Vec<String> {
        let Some(port) = self.http_base_port else {
            return Vec::new();
        };
        (0..self.replicas)
            .map(|n| format!("http://127.0.0.1:{}", port as usize + n))
            .collect()
    }
}

/// Memory of one process, from `/proc/<pid>/status`.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Memory {
    /// Resident set now, in MiB.
    pub rss_mib: f64,
    /// Peak resident set since start (VmHWM), in MiB.
    pub peak_rss_mib: f64,
}

/// Running replicas; stopped (SIGTERM, then waited for) by [`Fleet::stop`] or on drop.
pub struct Fleet {
    children: Vec<Child>,
}

impl Fleet {
    /// Starts the replicas (without migrating: the caller has) and waits until each has
    /// registered and had a moment to open its LISTEN connection.
    pub async fn start(spec: &FleetSpec, client: &tokio_postgres::Client) -> anyhow::Result<Fleet> {
        let before = super::store::replica_count(client).await?;
        let mut fleet = Fleet {
            children: Vec::with_capacity(spec.replicas),
        };
        for n in 0..spec.replicas {
            fleet.children.push(spawn(spec, n)?);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let live = super::store::replica_count(client).await?;
            if live - before >= spec.replicas as i64 {
                break;
            }
            for child in &mut fleet.children {
                if let Some(status) = child.try_wait()? {
                    anyhow::bail!("a replica exited during start: {status}");
                }
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "replicas did not register within 30 s"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Registration comes before the workers and the LISTEN connection start.
        tokio::time::sleep(Duration::from_millis(500)).await;
        Ok(fleet)
    }

    /// Process ids of the replicas.
    pub fn pids(&self) -> Vec<u32> {
        self.children.iter().map(Child::id).collect()
    }

    /// Memory of each replica, in start order.
    pub fn memory(&self) -> Vec<Memory> {
        self.pids()
            .into_iter()
            .map(|pid| memory(pid).unwrap_or_default())
            .collect()
    }

    /// CPU seconds each replica has used so far.
    pub fn cpu_seconds(&self) -> Vec<f64> {
        self.pids()
            .into_iter()
            .map(|pid| cpu_seconds(pid).unwrap_or(0.0))
            .collect()
    }

    /// CPU seconds all replicas together have used so far.
    pub fn total_cpu_seconds(&self) -> f64 {
        self.cpu_seconds().iter().sum()
    }

    /// SIGTERM to every replica, then waits for each (they finish or hand back work).
    pub fn stop(mut self) {
        self.stop_all();
    }

    fn stop_all(&mut self) {
        if self.children.is_empty() {
            return;
        }
        // Every run that starts a fleet says how much memory its replicas peaked at, so
        // a runaway shows in any benchmark's output, not only when the kernel steps in.
        let peaks: Vec<String> = self
            .memory()
            .iter()
            .map(|m| format!("{:.0}", m.peak_rss_mib))
            .collect();
        eprintln!("fleet: replicas' peak RSS {} MiB", peaks.join(", "));
        for child in &self.children {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
        }
        for child in &mut self.children {
            let deadline = Instant::now() + Duration::from_secs(20);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        self.children.clear();
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.stop_all();
    }
}

fn spawn(spec: &FleetSpec, n: usize) -> anyhow::Result<Child> {
    let mut command = Command::new(&spec.bin);
    let roles = match (&spec.roles, spec.http_base_port) {
        (Some(roles), _) => roles.as_str(),
        (None, Some(_)) => "api,worker,maintenance",
        (None, None) => "worker,maintenance",
    };
    command
        .arg("serve")
        .args(["--database-url", &spec.database_url])
        .args(["--roles", roles, "--no-migrate"])
        .arg("--task-types")
        .arg(&spec.task_types)
        .args([
            "--replica-name",
            &format!("load-{n}-{}", std::process::id()),
        ])
        // Without the API a replica still serves /healthz, /readyz and /metrics: on a
        // port the system picks, so a fleet's replicas never collide.
        .arg(match spec.http_base_port {
            Some(p) => format!("--listen=127.0.0.1:{}", p as usize + n),
            None => "--listen=127.0.0.1:0".to_owned(),
        })
        .args(&spec.serve_args)
        .env(
            "TASKLANE_LOG",
            std::env::var("TASKLANE_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    command
        .spawn()
        .with_context(|| format!("start {}", spec.bin.display()))
}

/// Memory of process `pid`; `None` if it is gone or `/proc` is unavailable.
pub fn memory(pid: u32) -> Option<Memory> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<f64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        let kib: f64 = line[name.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kib / 1024.0)
    };
    Some(Memory {
        rss_mib: field("VmRSS:")?,
        peak_rss_mib: field("VmHWM:")?,
    })
}

/// CPU time (user + system) process `pid` has used, in seconds; `None` if unknown.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces; the fields after it are space separated.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / CLOCK_TICKS_PER_SECOND)
}

/// `sysconf(_SC_CLK_TCK)`: 100 on every Linux this runs on.
const CLOCK_TICKS_PER_SECOND: f64 = 100.0;

/// Writes the demo task types (`demo/task-types.toml`; load runs submit `noop` or
/// `sleep`) to `dir` and returns the file's path.
pub fn write_task_types(dir: &Path) -> anyhow::Result<PathBuf> {
    let path = dir.join(format!("tasklane-load-types-{}.toml", std::process::id()));
    std::fs::write(&path, DEMO_TASK_TYPES).with_context(|| format!("write {}", path.display()))?;
    Ok(path)
}
