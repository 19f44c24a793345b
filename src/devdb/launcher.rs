//! How the PostgreSQL binaries are found and run: `initdb`/`pg_ctl` (and `pg_dump`, for
//! the schema test) from PATH or the newest `/usr/lib/postgresql/*/bin`, and, because
//! the server tools refuse to run as root, through `runuser` as `postgres` (or
//! `nobody`) when this process is root.

use std::fs;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context as _};

pub(super) struct PgBins {
    pub(super) initdb: PathBuf,
    pub(super) pg_ctl: PathBuf,
}

impl PgBins {
    /// `initdb` and `pg_ctl` from PATH, else the highest `/usr/lib/postgresql/*/bin`
    /// (Debian installs them off PATH). Symlinks are resolved so `pg_ctl` finds the
    /// `postgres` binary next to it.
    pub(super) fn find() -> anyhow::Result<PgBins> {
        for dir in bin_dirs() {
            let (initdb, pg_ctl) = (dir.join("initdb"), dir.join("pg_ctl"));
            if initdb.is_file() && pg_ctl.is_file() {
                return Ok(PgBins {
                    initdb: fs::canonicalize(initdb)?,
                    pg_ctl: fs::canonicalize(pg_ctl)?,
                });
            }
        }
        bail!("no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in /usr/lib/postgresql/*/bin; install PostgreSQL or set DATABASE_URL")
    }
}

/// Directories that may hold PostgreSQL binaries, in the order they are preferred: PATH,
/// then `/usr/lib/postgresql/<major>/bin`, highest major first (Debian installs them off
/// PATH).
fn bin_dirs() -> Vec<PathBuf> {
    let path_dirs = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    let mut versioned: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .collect();
    versioned.sort_by_key(|(version, _)| std::cmp::Reverse(*version));
    path_dirs
        .into_iter()
        .chain(versioned.into_iter().map(|(_, dir)| dir))
        .collect()
}

/// The first `pg_dump` (in [`bin_dirs`] order) whose major version is at least
/// `server_major`: pg_dump refuses to dump a newer server than itself. Runs as this
/// process's user; unlike the server tools, client tools accept root.
pub fn find_pg_dump(server_major: u32) -> anyhow::Result<PathBuf> {
    let mut seen = Vec::new();
    for path in bin_dirs().into_iter().map(|dir| dir.join("pg_dump")) {
        if !path.is_file() {
            continue;
        }
        let out = Command::new(&path).arg("--version").output();
        let version = out
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default();
        if major_version(&version).is_some_and(|major| major >= server_major) {
            return Ok(path);
        }
        seen.push(format!("{} ({version})", path.display()));
    }
    bail!(
        "no pg_dump of PostgreSQL {server_major} or newer on PATH or in /usr/lib/postgresql/*/bin; found: [{}]",
        seen.join(", ")
    )
}

/// The major version in a tool's `--version` line, e.g. 15 in
/// "pg_dump (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)" or 18 in "... 18beta1".
fn major_version(line: &str) -> Option<u32> {
    let number = line.split(") ").nth(1)?;
    let digits: String = number.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// How cluster commands are run: directly, or as root through `runuser` as an
/// unprivileged user, since initdb and postgres refuse to run as root.
#[derive(Debug)]
pub(super) struct Launcher {
    run_as: Option<(PathBuf, String)>,
}

impl Launcher {
    pub(super) fn detect() -> anyhow::Result<Launcher> {
        if effective_uid()? != 0 {
            return Ok(Launcher { run_as: None });
        }
        let runuser = [
            "/usr/sbin/runuser",
            "/sbin/runuser",
            "/usr/bin/runuser",
            "/bin/runuser",
        ]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .context("running as root, but there is no runuser to start PostgreSQL as another user")?;
        let user_exists = |user: &str| {
            Command::new("id")
                .args(["-u", user])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        let user = if user_exists("postgres") {
            "postgres"
        } else {
            "nobody"
        };
        Ok(Launcher {
            run_as: Some((runuser, user.to_owned())),
        })
    }

    /// The argv prefix (`runuser -u <user> --`), empty when not root.
    pub(super) fn prefix(&self) -> Vec<String> {
        match &self.run_as {
            Some((runuser, user)) => {
                vec![
                    runuser.display().to_string(),
                    "-u".into(),
                    user.clone(),
                    "--".into(),
                ]
            }
            None => Vec::new(),
        }
    }

    /// A command for `program`, run from `cwd` (the unprivileged user may not be able
    /// to enter our working directory, and postgres tools complain if so).
    pub(super) fn command(&self, program: &Path, cwd: &Path) -> Command {
        let mut cmd = match &self.run_as {
            Some((runuser, user)) => {
                let mut cmd = Command::new(runuser);
                cmd.args(["-u", user, "--"]).arg(program);
                cmd
            }
            None => Command::new(program),
        };
        cmd.current_dir(cwd);
        cmd
    }

    /// Gives `dir` to the user the cluster runs as.
    pub(super) fn hand_over(&self, dir: &Path) -> anyhow::Result<()> {
        if let Some((_, user)) = &self.run_as {
            let mut chown = Command::new("chown");
            chown.arg(user).arg(dir);
            run(chown, "chown cluster dir")?;
        }
        Ok(())
    }
}

/// The effective uid from /proc (Linux), else `id -u`; avoids a libc dependency.
pub(super) fn effective_uid() -> anyhow::Result<u32> {
    if let Ok(status) = fs::read_to_string("/proc/self/status") {
        if let Some(euid) = status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1))
            .and_then(|euid| euid.parse().ok())
        {
            return Ok(euid);
        }
    }
    let out = Command::new("id").arg("-u").output().context("run id -u")?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .context("parse id -u")
}

pub(super) fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("bind a free port")?;
    Ok(listener.local_addr()?.port())
}

/// Runs `cmd` to completion; on failure the error carries its output.
pub(super) fn run(mut cmd: Command, what: &str) -> anyhow::Result<()> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("spawn {what}"))?;
    if !out.status.success() {
        bail!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout).trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::major_version;

    #[test]
    fn major_version_reads_release_and_prerelease_lines() {
        let debian = "pg_dump (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)";
        assert_eq!(major_version(debian), Some(15));
        assert_eq!(major_version("pg_dump (PostgreSQL) 18beta1"), Some(18));
        assert_eq!(major_version("pg_dump: command not found"), None);
    }
}
