//! `tasklane serve` worker processes for tests that need several real replicas.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A task-types file in a temp dir, removed on drop.
pub struct TypesFile {
    pub path: PathBuf,
}

impl TypesFile {
    pub fn new(toml: &str) -> TypesFile {
        let path = std::env::temp_dir().join(format!(
            "tasklane-types-{}-{}.toml",
            std::process::id(),
            uuid::Uuid::new_v4()
        ));
        std::fs::write(&path, toml).expect("write task types");
        TypesFile { path }
    }
}

impl Drop for TypesFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A replica process running workers and maintenance; killed on drop.
pub struct WorkerProcess {
    pub name: String,
    child: Child,
}

impl WorkerProcess {
    /// Starts `tasklane serve --roles worker,maintenance` on `database_url`, plus `args`.
    pub fn start(name: &str, database_url: &str, types: &Path, args: &[&str]) -> WorkerProcess {
        let child = Command::new(env!("CARGO_BIN_EXE_tasklane"))
            .arg("serve")
            .args([
                "--roles",
                "worker,maintenance",
                "--no-migrate",
                "--replica-name",
                name,
            ])
            .arg("--task-types")
            .arg(types)
            .args(args)
            .env("DATABASE_URL", database_url)
            .env("TASKLANE_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start tasklane serve");
        WorkerProcess {
            name: name.to_owned(),
            child,
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Sends SIGTERM (graceful shutdown).
    pub fn terminate(&self) {
        signal(self.pid(), "TERM");
    }

    /// Sends SIGKILL: the replica dies at this instant.
    pub fn kill9(&mut self) {
        signal(self.pid(), "KILL");
        let _ = self.child.wait();
    }

    /// Waits for the process to exit (bounded); its exit status.
    pub fn wait(&mut self, within: std::time::Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + within;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        None
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn signal(pid: i32, name: &str) {
    let status = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{name} {pid}");
}
