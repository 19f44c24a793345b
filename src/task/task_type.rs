//! Registered task types: the name a submit refers to and the defaults a task snapshots
//! from it. A type unknown to a replica is refused at submit and never claimed there.

use std::time::Duration;

use super::backoff::Backoff;
use super::bounds::{self, Invalid};
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

/// The route a worker serves; a `local_only` task never goes to an external worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Route {
    Local,
    External,
}

impl Route {
    pub fn as_str(self) -> &'static str {
        match self {
            Route::Local => "local",
            Route::External => "external",
        }
    }
}

/// Whether a task may leave the local route, snapshotted at submit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Privacy {
    LocalOnly,
    ExternalAllowed,
}

impl Privacy {
    pub fn as_str(self) -> &'static str {
        match self {
            Privacy::LocalOnly => "local_only",
            Privacy::ExternalAllowed => "external_allowed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "local_only" => Some(Privacy::LocalOnly),
            "external_allowed" => Some(Privacy::ExternalAllowed),
            _ => None,
        }
    }
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
    /// Route of the `http` executor's calls.
    #[serde(default = "default_route")]
    pub route: Route,
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
}

fn default_route() -> Route {
    Route::Local
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

impl TaskType {
    /// A type with every default, for code that registers types programmatically.
    pub fn new(name: impl Into<String>, executor: Executor) -> Self {
        TaskType {
            name: name.into(),
            executor,
            url: None,
            route: default_route(),
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
        }
    }

    /// Whether the type has a route of `kind` (only `openai` types have routes).
    pub fn has_route(&self, kind: Route) -> bool {
        self.routes.iter().any(|r| r.route == kind)
    }

    /// The routes an attempt on `kind` tries, in order.
    pub fn routes_of(&self, kind: Route) -> impl Iterator<Item = &RouteSpec> {
        self.routes.iter().filter(move |r| r.route == kind)
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
        super::routes::validate(self)
    }
}

/// The demo task types, `noop`, `sleep` and `remote` (`demo/task-types.toml`): the one
/// copy that `tasklane dev`, load runs, the tests' replicas, `scripts/fuzz-api.sh` and
/// the Helm chart's default use.
pub const DEMO_TASK_TYPES: &str = include_str!("../../demo/task-types.toml");

/// The `task_type` array of a task-types TOML file.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskTypesFile {
    #[serde(default)]
    pub task_type: Vec<TaskType>,
}

impl TaskTypesFile {
    /// Parses and validates a task-types file; duplicate names are refused. Every
    /// refusal names the type (when it has a name) and the field, e.g.
    /// `task type "summarize": routes[1].route: unknown variant ...`.
    pub fn parse(text: &str) -> anyhow::Result<Vec<TaskType>> {
        let mut table: toml::Table = toml::from_str(text)?;
        let entries = match table.remove("task_type") {
            None => Vec::new(),
            Some(toml::Value::Array(entries)) => entries,
            Some(_) => anyhow::bail!("task_type: must be an array of tables ([[task_type]])"),
        };
        if let Some(key) = table.keys().next() {
            anyhow::bail!("unknown key {key:?} (only [[task_type]] tables are read)");
        }
        let mut types = Vec::with_capacity(entries.len());
        let mut seen = std::collections::HashSet::new();
        for (i, entry) in entries.into_iter().enumerate() {
            let name = match entry.get("name").and_then(toml::Value::as_str) {
                Some(name) => format!("task type {name:?}"),
                None => format!("task_type[{i}]"),
            };
            let task_type: TaskType = serde_path_to_error::deserialize(entry).map_err(|e| {
                let path = e.path().to_string();
                anyhow::anyhow!("{name}: {path}: {}", e.into_inner())
            })?;
            task_type
                .validate()
                .map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
            if !seen.insert(task_type.name.clone()) {
                anyhow::bail!("task type {:?} is defined twice", task_type.name);
            }
            types.push(task_type);
        }
        super::routes::check_unique_names(&types).map_err(anyhow::Error::msg)?;
        Ok(types)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_example_with_defaults() {
        let types = TaskTypesFile::parse(
            r#"
            [[task_type]]
            name = "summarize"
            executor = "http"
            url = "http://127.0.0.1:9000/v1/chat/completions"
            route = "local"
            resource = "local-model"
            max_attempts = 3
            lease_seconds = 30
            attempt_timeout_seconds = 300
            deadline_seconds = 600
            on_restart = "retry"
            privacy = "local_only"

            [[task_type]]
            name = "tick"
            executor = "noop"
            "#,
        )
        .unwrap();
        assert_eq!(types.len(), 2);
        assert_eq!(types[0].resource.as_deref(), Some("local-model"));
        assert_eq!(types[1].on_restart, RestartPolicy::Retry);
        assert_eq!(types[1].deadline_seconds, None);
    }

    #[test]
    fn the_demo_types_parse() {
        let types = TaskTypesFile::parse(DEMO_TASK_TYPES).unwrap();
        let names: Vec<&str> = types.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["noop", "sleep", "remote", "openai"]);
        assert_eq!(types[2].privacy, Privacy::ExternalAllowed);
        assert!(types[3].has_route(Route::Local) && types[3].has_route(Route::External));
    }

    #[test]
    fn refuses_bad_files() {
        let dup =
            "[[task_type]]\nname='a'\nexecutor='noop'\n[[task_type]]\nname='a'\nexecutor='noop'\n";
        assert!(TaskTypesFile::parse(dup).is_err());
        assert!(TaskTypesFile::parse("[[task_type]]\nname='a'\nexecutor='http'\n").is_err());
        assert!(TaskTypesFile::parse(
            "[[task_type]]\nname='a'\nexecutor='noop'\nlease_seconds=0\n"
        )
        .is_err());
        assert!(
            TaskTypesFile::parse("[[task_type]]\nname='a'\nexecutor='noop'\ncolour='red'\n")
                .is_err()
        );
    }
}
