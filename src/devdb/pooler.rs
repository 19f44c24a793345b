//! A real PgBouncer in transaction mode in front of a server, for the tests and benches
//! that run tasklane behind a connection pooler the way many managed PostgreSQL
//! offerings do. Debian's `pgbouncer` package provides the binary; like the server
//! tools it refuses to run as root, so as root it runs through `runuser` as the cluster
//! user. It lives in a temporary directory of its own and is killed on drop.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

use super::launcher::{free_port, Launcher};

/// How long PgBouncer gets to accept connections after it starts.
const STARTS_WITHIN: Duration = Duration::from_secs(30);

/// A running PgBouncer (`pool_mode = transaction`) in front of one server.
pub struct Pooler {
    child: Child,
    port: u16,
    upstream: String,
    user: String,
    dir: PathBuf,
}

impl Pooler {
    /// Starts PgBouncer in front of the server of `database_url` (TCP host and port as
    /// written in the URL): every database of that server, as the URL's user, with
    /// trust authentication on loopback.
    pub fn in_front_of(database_url: &str) -> anyhow::Result<Pooler> {
        let config: tokio_postgres::Config = database_url.parse()?;
        let host = match config.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
            _ => bail!("the database URL names no TCP host"),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let user = config.get_user().unwrap_or("postgres").to_owned();
        let binary = find_pgbouncer()?;
        let launcher = Launcher::detect()?;
        let dir = std::env::temp_dir().join(format!(
            "tasklane-pgbouncer-{}-{}",
            std::process::id(),
            free_port()?
        ));
        fs::create_dir_all(&dir)?;
        let listen = free_port()?;
        write_files(&dir, &host, port, listen, &user)?;
        launcher.hand_over(&dir)?;
        let mut argv = launcher.prefix();
        argv.push(binary.display().to_string());
        argv.push(dir.join("pgbouncer.ini").display().to_string());
        let child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("start pgbouncer")?;
        let mut pooler = Pooler {
            child,
            port: listen,
            upstream: format!("{host}:{port}"),
            user,
            dir,
        };
        pooler.wait_accepting()?;
        Ok(pooler)
    }

    /// `database_url` (a URL of the server this pooler fronts, as written) through the
    /// pooler instead.
    pub fn url_for(&self, database_url: &str) -> anyhow::Result<String> {
        let through = format!("127.0.0.1:{}", self.port);
        let url = database_url.replacen(&self.upstream, &through, 1);
        anyhow::ensure!(
            url != database_url,
            "the URL does not name {} as written",
            self.upstream
        );
        Ok(url)
    }

    /// PgBouncer's admin console (the `pgbouncer` database), where the fronted server's
    /// user may run `SHOW POOLS`, `SHOW STATS` and the other `SHOW` commands (simple
    /// query protocol only).
    pub fn console_url(&self) -> String {
        format!("postgres://{}@127.0.0.1:{}/pgbouncer", self.user, self.port)
    }

    /// The port PgBouncer listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// PgBouncer's own process id (from its pidfile; as root the child is `runuser`).
    pub fn pid(&self) -> Option<u32> {
        fs::read_to_string(self.dir.join("pgbouncer.pid"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// Whether the process still runs (a test fails on an exit it did not cause).
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// PgBouncer's log so far.
    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.join("pgbouncer.log")).unwrap_or_default()
    }

    fn wait_accepting(&mut self) -> anyhow::Result<()> {
        let started = Instant::now();
        while started.elapsed() < STARTS_WITHIN {
            if !self.running() {
                bail!("pgbouncer exited at start: {}", self.log());
            }
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        bail!("pgbouncer did not accept connections within {STARTS_WITHIN:?}")
    }
}

impl Drop for Pooler {
    fn drop(&mut self) {
        // As root the child is `runuser`, which may outlive the signal to it without
        // passing it on: PgBouncer's own pid is in its pidfile.
        if let Ok(pid) = fs::read_to_string(self.dir.join("pgbouncer.pid")) {
            let _ = Command::new("kill")
                .args(["-KILL", pid.trim()])
                .stderr(Stdio::null())
                .status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// The configuration: transaction pooling, the oldest settings Debian's 1.18 knows.
/// `extra_float_digits` is ignored as a startup parameter (clients such as libpq send
/// it); tasklane sends only `client_encoding`, which PgBouncer tracks itself. The user
/// may read the admin console's `SHOW` commands (`stats_users`).
fn write_files(dir: &Path, host: &str, port: u16, listen: u16, user: &str) -> anyhow::Result<()> {
    let ini = format!(
        "[databases]\n\
         * = host={host} port={port}\n\
         [pgbouncer]\n\
         listen_addr = 127.0.0.1\n\
         listen_port = {listen}\n\
         unix_socket_dir =\n\
         auth_type = trust\n\
         auth_file = {auth}\n\
         pool_mode = transaction\n\
         max_client_conn = 2000\n\
         default_pool_size = 20\n\
         stats_users = {user}\n\
         ignore_startup_parameters = extra_float_digits\n\
         logfile = {log}\n\
         pidfile = {pid}\n",
        auth = dir.join("users.txt").display(),
        log = dir.join("pgbouncer.log").display(),
        pid = dir.join("pgbouncer.pid").display(),
    );
    fs::write(dir.join("pgbouncer.ini"), ini)?;
    let mut users = fs::File::create(dir.join("users.txt"))?;
    writeln!(users, "\"{user}\" \"\"")?;
    Ok(())
}

/// `pgbouncer` from PATH or Debian's `/usr/sbin`.
fn find_pgbouncer() -> anyhow::Result<PathBuf> {
    let path_dirs = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    path_dirs
        .into_iter()
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")])
        .map(|dir| dir.join("pgbouncer"))
        .find(|p| p.is_file())
        .context("no pgbouncer on PATH or in /usr/sbin: install Debian's pgbouncer package")
}
