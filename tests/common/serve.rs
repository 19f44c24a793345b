//! Real `tasklane serve` processes for tests: the one place a test starts a replica.
//!
//! Every replica runs against one test database (already migrated from the template,
//! so it starts with `--no-migrate`), with a task-types file written for it and removed
//! with it, a small pool, and an HTTP listener on a free loopback port. A replica with
//! the `api` role is awaited by polling `/readyz` ([`Serve::start`]); worker replicas
//! ([`Serve::workers`]) are not: tests wait on the database for what they need
//! (registration, a LISTEN, claimed tasks). Children are killed on drop.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use tasklane::task::types_file::DEMO_TASK_TYPES;

use super::api::Api;
use super::eventually;

/// How long a replica with the API gets to answer `/readyz` with 200.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// How long `serve` with a setting it must refuse gets to exit.
const REFUSED_WITHIN: Duration = Duration::from_secs(60);

/// The path to the tasklane binary under test.
pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_tasklane")
}

/// Runs `tasklane serve` with `args` and the variables `env` (on top of a loopback
/// listener and `warn` logs, without `TASKLANE_DATABASE_URL`), which must refuse its
/// configuration and exit unsuccessfully (bounded: a replica that starts instead is
/// killed and the test fails); its stderr.
pub async fn refused_at_start(args: &[&str], env: &[(&str, &str)]) -> String {
    let mut command = tokio::process::Command::new(binary());
    command
        .arg("serve")
        .args(args)
        .env_remove("TASKLANE_DATABASE_URL")
        .env("TASKLANE_LISTEN", "127.0.0.1:0")
        .env("TASKLANE_LOG", "warn")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(REFUSED_WITHIN, command.output())
        .await
        .unwrap_or_else(|_| panic!("serve {args:?} with {env:?} started instead of refusing"))
        .expect("run tasklane serve");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        !output.status.success(),
        "serve {args:?} with {env:?} was not refused: {stderr}"
    );
    stderr
}

/// How to start a replica, beyond what every test replica gets.
#[derive(Default, Clone)]
pub struct Options {
    /// `--roles`; default all three.
    pub roles: Option<&'static str>,
    /// `--replica-name`; default host name and pid.
    pub name: Option<String>,
    /// The task-types TOML; default the demo types (`demo/task-types.toml`).
    pub task_types: Option<&'static str>,
    /// Extra `serve` flags (they win over the defaults, which are set in the environment).
    pub args: Vec<String>,
    /// Extra `TASKLANE_*` variables.
    pub env: Vec<(&'static str, String)>,
    /// A file for the replica's stderr (its logs); default the test's own stderr.
    pub stderr: Option<PathBuf>,
}

/// One `tasklane serve` child process, killed on drop.
pub struct Serve {
    child: Child,
    /// `http://127.0.0.1:PORT`: operations routes on every replica, `/v1/` with role `api`.
    pub base: String,
    _types: TypesFile,
}

impl Serve {
    /// Starts a replica with the API and waits (bounded) until `/readyz` is 200.
    pub async fn start(database_url: &str, options: Options) -> Serve {
        let serve = Serve::spawn(database_url, options);
        serve.wait_ready(READY_WITHIN).await;
        serve
    }

    /// Starts a worker replica (`worker,maintenance`, no HTTP) named `name`, with its own
    /// task types and extra flags. Does not wait: the caller waits on the database.
    pub fn workers(
        database_url: &str,
        name: &str,
        task_types: &'static str,
        args: &[&str],
    ) -> Serve {
        let options = Options {
            roles: Some("worker,maintenance"),
            name: Some(name.to_owned()),
            task_types: Some(task_types),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: Vec::new(),
            stderr: None,
        };
        Serve::spawn(database_url, options)
    }

    /// Starts the process; returns at once.
    pub fn spawn(database_url: &str, options: Options) -> Serve {
        let port = free_port();
        let types = TypesFile::new(options.task_types.unwrap_or(DEMO_TASK_TYPES));
        let mut command = Command::new(binary());
        command
            .args(["serve", "--no-migrate"])
            .args(&options.args)
            .env("DATABASE_URL", database_url)
            .env_remove("TASKLANE_DATABASE_URL")
            .env("TASKLANE_LISTEN", format!("127.0.0.1:{port}"))
            .env("TASKLANE_TASK_TYPES", &types.path)
            .env("TASKLANE_POOL_SIZE", "8")
            .env("TASKLANE_SHUTDOWN_GRACE_SECONDS", "5")
            .env(
                "TASKLANE_LOG",
                std::env::var("TASKLANE_TEST_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        if let Some(roles) = options.roles {
            command.env("TASKLANE_ROLES", roles);
        }
        if let Some(name) = &options.name {
            command.env("TASKLANE_REPLICA_NAME", name);
        }
        for (key, value) in &options.env {
            command.env(key, value);
        }
        if let Some(path) = &options.stderr {
            command.stderr(std::fs::File::create(path).expect("create the replica's log file"));
        }
        let child = command.spawn().expect("start tasklane serve");
        Serve {
            child,
            base: format!("http://127.0.0.1:{port}"),
            _types: types,
        }
    }

    async fn wait_ready(&self, bound: Duration) {
        let client = reqwest::Client::new();
        let url = format!("{}/readyz", self.base);
        let what = format!("replica at {} ready", self.base);
        eventually(bound, &what, || async {
            let status = client.get(&url).send().await.map(|r| r.status());
            match status {
                Ok(status) if status == 200 => Ok(()),
                other => Err(other.map_err(|e| e.to_string())),
            }
        })
        .await
    }

    /// The process id, e.g. to signal it.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM (graceful shutdown).
    pub fn terminate(&self) {
        signal(self.pid(), "TERM");
    }

    /// Sends SIGKILL and reaps the process: the replica dies at this instant.
    pub fn kill9(&mut self) {
        signal(self.pid(), "KILL");
        let _ = self.child.wait();
    }

    /// Waits (bounded) for the process to exit; its exit status.
    pub async fn wait_exit(&mut self, bound: Duration) -> ExitStatus {
        let child = &mut self.child;
        eventually(bound, "the replica to exit", || {
            std::future::ready(child.try_wait().expect("poll the child"))
        })
        .await
    }

    /// The process's resident memory now, in MiB (`VmRSS`). Panics once the process
    /// has exited (an exited child that is not yet reaped has no `VmRSS`), so a fault
    /// test that watches memory also fails on any exit.
    pub fn rss_mib(&self) -> f64 {
        let pid = self.pid();
        tasklane::load::fleet::memory(pid)
            .unwrap_or_else(|| panic!("replica {pid} exited on its own"))
            .rss_mib
    }

    /// A client of this replica using `token`.
    pub fn api(&self, token: &str) -> Api {
        Api {
            base: self.base.clone(),
            token: token.to_owned(),
            http: reqwest::Client::new(),
            router: None,
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn signal(pid: u32, name: &str) {
    let status = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{name} {pid}");
}

/// A port nobody listens on now (the OS picks it; the child binds it right after).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind a free port")
        .local_addr()
        .unwrap()
        .port()
}

/// A task-types file in the temp dir, removed on drop.
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
        std::fs::write(&path, toml).expect("write the task-types file");
        TypesFile { path }
    }
}

impl Drop for TypesFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
