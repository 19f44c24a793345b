//! Registered task types: the name a submit refers to and the defaults a task snapshots
//! from it. A type unknown to a replica is refused at submit and never claimed there.

use std::time::Duration;

use super::backoff::Backoff;
use super::bounds::{self, Invalid};
use super::locality::{Locality, Privacy};
use super::output_schema::OutputSchema;
use super::restart::RestartPolicy;
use super::routes::RouteSpec;

/// Who runs tasks of a type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Executor {
    /// Succeeds at once with `result = input`.
    Noop,
    /// Sleeps as its input says (demos, benchmarks, tests).
    Sleep,
    /// POSTs the input to an upstream URL.
    Http,
    /// Calls OpenAI-compatible Chat Completions endpoints over the type's routes.
    Openai,
    /// Only remote workers (worker HTTP protocol) run it; no in-process handler.
    Remote,
    /// An in-process Rust handler registered by the embedding program.
    Custom,
}

/// One `[[task_type]]` of the task-types file, with every default filled in.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskType {
    pub name: String,
    pub executor: Executor,
    /// Upstream for the `http` executor.
    #[serde(default)]
    pub url: Option<String>,
    /// Locality of the `http` executor's calls.
    #[serde(rename = "route", default = "default_locality")]
    pub locality: Locality,
    /// A cluster-wide slot pool limiting how many of these run at once.
    #[serde(default)]
    pub resource: Option<String>,
    #[serde(default = "default_max_attempts")]
    pub max_attempts: i32,
    #[serde(default = "default_lease_seconds")]
    pub lease_seconds: i64,
    #[serde(default = "default_attempt_timeout_seconds")]
    pub attempt_timeout_seconds: i64,
    /// Default queue deadline; none means a task may wait forever.
    #[serde(default)]
    pub deadline_seconds: Option<i64>,
    #[serde(default = "default_on_restart")]
    pub on_restart: RestartPolicy,
    #[serde(default = "default_privacy")]
    pub privacy: Privacy,
    /// First retry delay and cap of the exponential backoff.
    #[serde(default = "default_backoff_base_ms")]
    pub backoff_base_ms: u64,
    #[serde(default = "default_backoff_cap_seconds")]
    pub backoff_cap_seconds: u64,
    /// The allowlist: may tasks of this type ever leave the local routes (default
    /// false). A submit may narrow its privacy to `local_only`, never widen past this.
    #[serde(default)]
    pub external_allowed: bool,
    /// The `openai` executor's routes, in order: every local one before any external.
    #[serde(default)]
    pub routes: Vec<RouteSpec>,
    /// How long a task may wait, in a row, for the circuits of every route it may use to
    /// close: an attempt that finds them all open makes no call and does not count; past
    /// this wait it fails `no_fallback_allowed`.
    #[serde(default = "default_circuit_wait_seconds")]
    pub circuit_wait_seconds: u64,
    /// The JSON Schema every success's `output` must match (`openai` and `remote`
    /// types): given inline, or read from `output_schema_file` when the file is read.
    #[serde(default)]
    pub output_schema: Option<OutputSchema>,
    /// The JSON file `output_schema` is read from, as written: relative to the
    /// task-types file's directory (an absolute path as it is).
    #[serde(default)]
    pub output_schema_file: Option<std::path::PathBuf>,
}

/// The circuit wait of a type that names none: an hour.
pub const DEFAULT_CIRCUIT_WAIT_SECONDS: u64 = 3600;

fn default_locality() -> Locality {
    Locality::Local
}
fn default_max_attempts() -> i32 {
    3
}
fn default_lease_seconds() -> i64 {
    30
}
fn default_attempt_timeout_seconds() -> i64 {
    300
}
fn default_on_restart() -> RestartPolicy {
    RestartPolicy::Retry
}
fn default_privacy() -> Privacy {
    Privacy::LocalOnly
}
fn default_backoff_base_ms() -> u64 {
    1000
}
fn default_backoff_cap_seconds() -> u64 {
    300
}
fn default_circuit_wait_seconds() -> u64 {
    DEFAULT_CIRCUIT_WAIT_SECONDS
}

impl TaskType {
    /// A type with every default, for code that registers types programmatically.
    pub fn new(name: impl Into<String>, executor: Executor) -> Self {
        TaskType {
            name: name.into(),
            executor,
            url: None,
            locality: default_locality(),
            resource: None,
            max_attempts: default_max_attempts(),
            lease_seconds: default_lease_seconds(),
            attempt_timeout_seconds: default_attempt_timeout_seconds(),
            deadline_seconds: None,
            on_restart: default_on_restart(),
            privacy: default_privacy(),
            backoff_base_ms: default_backoff_base_ms(),
            backoff_cap_seconds: default_backoff_cap_seconds(),
            external_allowed: false,
            routes: Vec::new(),
            circuit_wait_seconds: DEFAULT_CIRCUIT_WAIT_SECONDS,
            output_schema: None,
            output_schema_file: None,
        }
    }

    /// Whether the type has routes of locality `kind` (only `openai` types have routes).
    pub fn has_routes(&self, kind: Locality) -> bool {
        self.routes.iter().any(|r| r.locality == kind)
    }

    /// The routes an attempt on `kind` tries, in order.
    pub fn routes_of(&self, kind: Locality) -> impl Iterator<Item = &RouteSpec> {
        self.routes.iter().filter(move |r| r.locality == kind)
    }

    pub fn backoff(&self) -> Backoff {
        Backoff {
            base: Duration::from_millis(self.backoff_base_ms),
            cap: Duration::from_secs(self.backoff_cap_seconds),
        }
    }

    pub fn lease(&self) -> Duration {
        Duration::from_secs(self.lease_seconds as u64)
    }

    pub fn attempt_timeout(&self) -> Duration {
        Duration::from_secs(self.attempt_timeout_seconds as u64)
    }

    /// Checks every bound, naming the offending field.
    pub fn validate(&self) -> Result<(), Invalid> {
        bounds::key("name", &self.name)?;
        bounds::within("max_attempts", self.max_attempts, &bounds::MAX_ATTEMPTS)?;
        bounds::within("lease_seconds", self.lease_seconds, &bounds::LEASE_SECONDS)?;
        bounds::within(
            "attempt_timeout_seconds",
            self.attempt_timeout_seconds,
            &bounds::ATTEMPT_TIMEOUT_SECONDS,
        )?;
        if let Some(deadline) = self.deadline_seconds {
            bounds::within("deadline_seconds", deadline, &bounds::DEADLINE_SECONDS)?;
        }
        if let Some(resource) = &self.resource {
            bounds::key("resource", resource)?;
        }
        if self.executor == Executor::Http && self.url.is_none() {
            return Err(Invalid::new("url", "the http executor needs a url"));
        }
        if self.backoff_base_ms == 0 || self.backoff_cap_seconds == 0 {
            return Err(Invalid::new("backoff", "base and cap must be positive"));
        }
        Ok(())
    }
}
