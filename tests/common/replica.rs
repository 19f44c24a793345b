//! Real `tasklane serve` processes for HTTP tests: each on a free port of the loopback,
//! against one test database, with a task-types file written by the test. Readiness is
//! awaited by polling `/readyz` (bounded); children are killed on drop.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The task types every test replica knows.
pub const TASK_TYPES: &str = r#"
[[task_type]]
name = "noop"
executor = "noop"

[[task_type]]
name = "sleep"
executor = "sleep"
lease_seconds = 3

[[task_type]]
name = "remote"
executor = "remote"
lease_seconds = 30
max_attempts = 2
privacy = "external_allowed"
"#;

static NEXT_FILE: AtomicU64 = AtomicU64::new(0);

/// The path to the tasklane binary under test.
pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_tasklane")
}

/// Writes [`TASK_TYPES`] to a fresh temporary file.
pub fn task_types_file() -> PathBuf {
    let n = NEXT_FILE.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!(
        "tasklane-http-types-{}-{n}.toml",
        std::process::id()
    ));
    std::fs::write(&path, TASK_TYPES).expect("write the task-types file");
    path
}

/// One `tasklane serve` child process.
pub struct Serve {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
}

/// Options of a replica beyond the defaults.
#[derive(Default, Clone)]
pub struct Options {
    /// `--roles`, default all.
    pub roles: Option<&'static str>,
    /// Extra `TASKLANE_*` variables.
    pub env: Vec<(&'static str, String)>,
}

impl Serve {
    /// Starts a replica on `database_url` and waits (bounded) until `/readyz` is 200.
    pub async fn start(database_url: &str, options: Options) -> Serve {
        let port = free_port();
        let types = task_types_file();
        let mut command = Command::new(binary());
        command
            .arg("serve")
            .env("DATABASE_URL", database_url)
            .env_remove("TASKLANE_DATABASE_URL")
            .env("TASKLANE_LISTEN", format!("127.0.0.1:{port}"))
            .env("TASKLANE_TASK_TYPES", &types)
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
        for (key, value) in &options.env {
            command.env(key, value);
        }
        let child = command.spawn().expect("start tasklane serve");
        let serve = Serve {
            child,
            base: format!("http://127.0.0.1:{port}"),
        };
        serve.wait_ready(Duration::from_secs(60)).await;
        serve
    }

    async fn wait_ready(&self, bound: Duration) {
        let client = reqwest::Client::new();
        let started = Instant::now();
        loop {
            if let Ok(response) = client.get(format!("{}/readyz", self.base)).send().await {
                if response.status() == 200 {
                    return;
                }
            }
            assert!(
                started.elapsed() < bound,
                "replica at {} not ready within {bound:?}",
                self.base
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The process id, e.g. to signal it.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM (graceful shutdown).
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .arg("-TERM")
            .arg(self.pid().to_string())
            .status()
            .expect("run kill");
        assert!(status.success());
    }

    /// Waits (bounded) for the process to exit; true if it did.
    pub async fn wait_exit(&mut self, bound: Duration) -> bool {
        let started = Instant::now();
        while started.elapsed() < bound {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }

    /// A client of this replica using `token`.
    pub fn api(&self, token: &str) -> Api {
        Api {
            base: self.base.clone(),
            token: token.to_owned(),
            http: reqwest::Client::new(),
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port nobody listens on now (the OS picks it; the child binds it right after).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind a free port")
        .local_addr()
        .unwrap()
        .port()
}

/// Creates a token with the library (the CLI is tested on its own).
pub async fn token(database_url: &str, app: &str, scope: Option<&str>, perms: &[&str]) -> String {
    let spec = tasklane::http::tokens::TokenSpec {
        app: app.into(),
        scope_id: scope.map(Into::into),
        permissions: perms.iter().map(|p| p.to_string()).collect(),
        name: None,
    };
    tasklane::http::tokens::create(database_url, &spec)
        .await
        .expect("create token")
        .secret
}

/// Every permission of the application routes and the worker protocol.
pub const ALL: &[&str] = &["submit", "read", "cancel", "release", "delete", "work"];

/// An answer: status, headers and the JSON body (Null when not JSON).
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Answer {
    /// The problem+json `code`.
    pub fn code(&self) -> &str {
        self.body["code"].as_str().unwrap_or("")
    }
}

/// A small HTTP client bound to one replica and one token.
#[derive(Clone)]
pub struct Api {
    pub base: String,
    pub token: String,
    pub http: reqwest::Client,
}

impl Api {
    pub fn with_token(&self, token: &str) -> Api {
        Api {
            token: token.to_owned(),
            ..self.clone()
        }
    }

    pub async fn get(&self, path: &str) -> Answer {
        self.send(self.http.get(format!("{}{path}", self.base)))
            .await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Answer {
        self.send(self.http.post(format!("{}{path}", self.base)).json(body))
            .await
    }

    /// POSTs raw bytes as JSON.
    pub async fn post_raw(&self, path: &str, body: impl Into<reqwest::Body>) -> Answer {
        let request = self
            .http
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json");
        self.send(request.body(body)).await
    }

    pub async fn send(&self, request: reqwest::RequestBuilder) -> Answer {
        let request = if self.token.is_empty() {
            request
        } else {
            request.bearer_auth(&self.token)
        };
        let response = request.send().await.expect("send request");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.expect("read body");
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Answer {
            status,
            headers,
            body,
        }
    }

    /// Submits a task; `extra` fields are merged into the body.
    pub async fn submit(&self, task_type: &str, scope: &str, key: &str, extra: Value) -> Answer {
        let mut body = serde_json::json!({"task_type": task_type, "scope_id": scope, "effect_key": key, "input": {}});
        if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
            for (k, v) in extra {
                body.insert(k.clone(), v.clone());
            }
        }
        self.post("/v1/tasks", &body).await
    }

    /// Reads a task until `done` holds for it (bounded).
    pub async fn wait_for(&self, id: &str, done: impl Fn(&Value) -> bool) -> Value {
        let started = Instant::now();
        loop {
            let answer = self.get(&format!("/v1/tasks/{id}")).await;
            if done(&answer.body) {
                return answer.body;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "task {id} never got there: {}",
                answer.body
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
