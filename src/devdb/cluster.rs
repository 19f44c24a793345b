//! A private, throwaway PostgreSQL cluster: found, initialised, started, watched and
//! removed. By default durability is switched off (`fsync`, `synchronous_commit`,
//! `full_page_writes`) because the data dies with the process anyway; a cluster that
//! must behave as users run PostgreSQL (the benchmarks' headline figures, tests that
//! crash the server and count what survived) asks for [`ClusterOptions::durable`]. A
//! cluster can be copied into a streaming standby and the standby promoted
//! (`standby.rs`), for failover tests.

use std::fs;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::Context as _;

use super::launcher::{free_port, run, Launcher, PgBins};
use super::pid_alive;

mod standby;

const DIR_PREFIX: &str = "tasklane-pg-";
const START_ATTEMPTS: usize = 5;

/// Runs after the owner is gone: `$1` owner pid, `$2` pg_ctl, `$3` data dir, `$4`
/// cluster dir, the rest the `runuser ... --` prefix (empty when not root). Polling
/// with `kill -0` works for any owner, however it dies; HUP and INT are ignored so a
/// closing terminal or a Ctrl-C aimed at the test run cannot skip the cleanup.
const WATCHDOG_SCRIPT: &str = r#"
trap '' HUP INT
owner=$1; pg_ctl=$2; data=$3; dir=$4; shift 4
while kill -0 "$owner" 2>/dev/null; do sleep 0.5; done
"$@" "$pg_ctl" stop -m immediate -D "$data" >/dev/null 2>&1
rm -rf "$dir"
"#;

/// Extra server settings and files for a cluster that must differ from the default
/// (tests/it/tls.rs starts one with `ssl=on`, its certificate and a `hostssl`-only
/// pg_hba.conf). The default is empty and costs nothing.
#[derive(Debug, Default, Clone)]
pub struct ClusterOptions {
    /// `-c name=value` settings added to the server's command line.
    pub settings: Vec<(String, String)>,
    /// Files written into the data directory (mode 0600, owned by the server's user)
    /// before the server starts, e.g. `server.key`; relative settings such as
    /// `ssl_cert_file=server.crt` resolve against that directory.
    pub files: Vec<(String, Vec<u8>)>,
    /// Replaces pg_hba.conf when set.
    pub hba: Option<String>,
    /// Keeps PostgreSQL's durability defaults (fsync, full-page writes, synchronous
    /// commit on). Without it a crash of the server (`restart_immediate`) may lose
    /// commits it acknowledged, and every commit costs less than on a real server.
    pub durable: bool,
}

/// A cluster started by this process. Dropping it (or [`PrivateCluster::stop`]) stops
/// the server and removes its directory; if the process dies first, its watchdog does.
#[derive(Debug)]
pub struct PrivateCluster {
    url: String,
    port: u16,
    dir: PathBuf,
    pg_ctl: PathBuf,
    launcher: Launcher,
    watchdog: Option<Child>,
    stopped: bool,
}

impl PrivateCluster {
    /// Sweeps leftovers of crashed runs, then initialises and starts a new cluster on
    /// a free port. Blocking: it runs `initdb` and `pg_ctl`.
    pub fn start() -> anyhow::Result<PrivateCluster> {
        PrivateCluster::start_with(&ClusterOptions::default())
    }

    /// [`PrivateCluster::start`] with extra settings and files.
    pub fn start_with(options: &ClusterOptions) -> anyhow::Result<PrivateCluster> {
        let bins = PgBins::find()?;
        let launcher = Launcher::detect()?;
        sweep_stale_dirs(&bins.pg_ctl, &launcher);
        let mut cluster = PrivateCluster::new_dir(bins.pg_ctl, launcher)?;

        let mut initdb = cluster.launcher.command(&bins.initdb, &cluster.dir);
        initdb.arg("-D").arg(cluster.data_dir()).args([
            "-A",
            "trust",
            "-U",
            "postgres",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale=C",
        ]);
        run(initdb, "initdb")?;
        cluster.write_files(options)?;
        cluster.start_on_a_free_port(options)?;
        Ok(cluster)
    }

    /// A new cluster directory, owned by the server's user and watched, with no data
    /// directory yet and no server.
    fn new_dir(pg_ctl: PathBuf, launcher: Launcher) -> anyhow::Result<PrivateCluster> {
        let dir = std::env::temp_dir().join(format!(
            "{DIR_PREFIX}{}-{:016x}",
            std::process::id(),
            rand::random::<u64>()
        ));
        fs::create_dir(&dir).with_context(|| format!("create {}", dir.display()))?;
        // From here on `cluster` owns the directory: any early return drops it, which
        // removes the directory; the watchdog covers a crash in between.
        let mut cluster = PrivateCluster {
            url: String::new(),
            port: 0,
            dir,
            pg_ctl,
            launcher,
            watchdog: None,
            stopped: false,
        };
        cluster.launcher.hand_over(&cluster.dir)?;
        cluster.watchdog = Some(cluster.spawn_watchdog()?);
        Ok(cluster)
    }

    /// Starts the server of the data directory on a free port and sets the URL.
    fn start_on_a_free_port(&mut self, options: &ClusterOptions) -> anyhow::Result<()> {
        let mut last_error = None;
        for _ in 0..START_ATTEMPTS {
            // The port is free now but could be taken before postgres binds it; a
            // failed start is retried on another port.
            let port = free_port()?;
            match self.start_on(port, options) {
                Ok(()) => {
                    self.port = port;
                    self.url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
                    tracing::info!(dir = %self.dir.display(), port, "started private PostgreSQL cluster");
                    return Ok(());
                }
                Err(error) => {
                    self.pg_ctl_stop();
                    last_error = Some(error);
                }
            }
        }
        Err(last_error.expect("at least one attempt")).context("start private PostgreSQL cluster")
    }

    /// `postgres://postgres@127.0.0.1:<port>/postgres`; trust auth, no password.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The TCP port the server listens on (on 127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory holding the data directory, socket and server log.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stops the server and removes its directory now.
    pub async fn stop(self) {
        // Drop runs `pg_ctl stop`; do it off the async worker threads.
        let _ = tokio::task::spawn_blocking(move || drop(self)).await;
    }

    /// Restarts the server at once, as a crash would (`pg_ctl restart -m immediate`):
    /// every session ends without a goodbye, and the server comes back on the same port
    /// with the same settings after crash recovery. Blocking: it runs `pg_ctl`.
    pub fn restart_immediate(&self) -> anyhow::Result<()> {
        let mut cmd = self.launcher.command(&self.pg_ctl, &self.dir);
        cmd.args(["restart", "-m", "immediate", "-w", "-D"])
            .arg(self.data_dir())
            .arg("-l")
            .arg(self.dir.join("log"));
        run(cmd, "pg_ctl restart")
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn write_files(&self, options: &ClusterOptions) -> anyhow::Result<()> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let hba = options
            .hba
            .as_ref()
            .map(|text| ("pg_hba.conf", text.as_bytes()));
        let files = options
            .files
            .iter()
            .map(|(n, b)| (n.as_str(), b.as_slice()));
        for (name, bytes) in files.chain(hba) {
            let path = self.data_dir().join(name);
            let mut file = fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&path)
                .with_context(|| format!("create {}", path.display()))?;
            std::io::Write::write_all(&mut file, bytes)
                .with_context(|| format!("write {}", path.display()))?;
            self.launcher.hand_over(&path)?;
        }
        Ok(())
    }

    fn start_on(&self, port: u16, extra: &ClusterOptions) -> anyhow::Result<()> {
        let mut options = format!(
            "-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} \
             -c max_connections=300",
            self.dir.display()
        );
        if !extra.durable {
            options.push_str(" -c fsync=off -c synchronous_commit=off -c full_page_writes=off");
        }
        for (name, value) in &extra.settings {
            options.push_str(&format!(" -c {name}={value}"));
        }
        let log = self.dir.join("log");
        let mut cmd = self.launcher.command(&self.pg_ctl, &self.dir);
        cmd.args(["start", "-w", "-D"])
            .arg(self.data_dir())
            .arg("-l")
            .arg(&log)
            .arg("-o")
            .arg(options);
        run(cmd, "pg_ctl start").map_err(|error| {
            let tail = fs::read_to_string(&log).unwrap_or_default();
            let tail: Vec<&str> = tail.lines().rev().take(10).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            error.context(format!("server log tail:\n{}", tail.join("\n")))
        })
    }

    fn spawn_watchdog(&self) -> anyhow::Result<Child> {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(WATCHDOG_SCRIPT)
            .arg("tasklane-devdb-watchdog")
            .arg(std::process::id().to_string())
            .arg(&self.pg_ctl)
            .arg(self.data_dir())
            .arg(&self.dir)
            .args(self.launcher.prefix())
            // Its own process group, so signals aimed at the test run's group (Ctrl-C)
            // do not take the watchdog down with it.
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd.spawn().context("spawn cluster watchdog")
    }

    fn pg_ctl_stop(&self) {
        let mut cmd = self.launcher.command(&self.pg_ctl, &self.dir);
        cmd.args(["stop", "-m", "immediate", "-D"])
            .arg(self.data_dir());
        let _ = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }

    fn shutdown(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        if self.data_dir().join("postmaster.pid").exists() {
            self.pg_ctl_stop();
        }
        if let Err(error) = fs::remove_dir_all(&self.dir) {
            tracing::warn!(dir = %self.dir.display(), %error, "could not remove private cluster dir");
        }
        // Only now: until the directory is gone, the watchdog is the fallback.
        if let Some(mut watchdog) = self.watchdog.take() {
            let _ = watchdog.kill();
            let _ = watchdog.wait();
        }
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Removes `tasklane-pg-<pid>-*` directories whose owner is dead (its watchdog was
/// killed too, or the machine went down), stopping a server still running there.
fn sweep_stale_dirs(pg_ctl: &Path, launcher: &Launcher) {
    let Ok(entries) = fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name
            .to_str()
            .and_then(|n| n.strip_prefix(DIR_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid_alive(owner) {
            continue;
        }
        let dir = entry.path();
        let data = dir.join("data");
        if data.join("postmaster.pid").exists() {
            let mut cmd = launcher.command(pg_ctl, Path::new("/"));
            cmd.args(["stop", "-m", "immediate", "-D"]).arg(&data);
            let _ = cmd
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        match fs::remove_dir_all(&dir) {
            Ok(()) => tracing::info!(dir = %dir.display(), "removed stale private cluster"),
            Err(error) => {
                tracing::debug!(dir = %dir.display(), %error, "could not remove stale cluster")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Re-runs this test binary as a child that starts a cluster, SIGKILLs it, and
    /// expects the watchdog to stop the server and remove the directory.
    #[test]
    fn watchdog_cleans_up_after_a_killed_owner() {
        const CHILD_ENV: &str = "TASKLANE_DEVDB_WATCHDOG_CHILD";
        if std::env::var_os(CHILD_ENV).is_some() {
            let cluster = PrivateCluster::start().unwrap();
            println!("CLUSTER_DIR={}", cluster.dir().display());
            std::thread::sleep(std::time::Duration::from_secs(60));
            unreachable!("the parent kills this process");
        }
        use std::io::BufRead as _;
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "devdb::cluster::tests::watchdog_cleans_up_after_a_killed_owner",
            ])
            .args(["--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, "1")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let dir = std::io::BufReader::new(child.stdout.take().unwrap())
            .lines()
            .map_while(Result::ok)
            // libtest prints "test <name> ... " on the same line first.
            .find_map(|line| {
                line.split_once("CLUSTER_DIR=")
                    .map(|(_, dir)| PathBuf::from(dir))
            })
            .expect("child reports its cluster dir");
        let pid_file = fs::read_to_string(dir.join("data/postmaster.pid")).unwrap();
        let postmaster: u32 = pid_file.lines().next().unwrap().trim().parse().unwrap();
        assert!(pid_alive(postmaster));

        child.kill().unwrap(); // SIGKILL: no destructors, no atexit
        child.wait().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while (dir.exists() || pid_alive(postmaster)) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        assert!(!dir.exists(), "{} survived its owner", dir.display());
        assert!(
            !pid_alive(postmaster),
            "postmaster {postmaster} survived its owner"
        );
    }

    #[test]
    fn sweep_removes_dirs_of_dead_owners_only() {
        let dead = crate::devdb::tests::dead_pid();
        let tmp = std::env::temp_dir();
        let stale = tmp.join(format!("{DIR_PREFIX}{dead}-test"));
        let live = tmp.join(format!("{DIR_PREFIX}{}-sweeptest", std::process::id()));
        fs::create_dir_all(stale.join("data")).unwrap();
        fs::create_dir_all(&live).unwrap();
        let launcher = Launcher::detect().unwrap();
        sweep_stale_dirs(Path::new("/nonexistent/pg_ctl"), &launcher);
        assert!(!stale.exists());
        assert!(live.exists());
        fs::remove_dir_all(live).unwrap();
    }
}
