//! The in-process handler of each task type this replica runs: built-in executors for
//! `noop`, `sleep`, `http` and `openai`, and the application's own for `custom` types.
//! `remote` types have none here (remote workers run them over the worker protocol).
//! It also says which types each kind of claim loop takes ([`ClaimSets`]), so an
//! `openai` type runs its local routes first and its external ones only on fallback.

use std::collections::HashMap;
use std::sync::Arc;

use super::executors::{self, ClientOptions};
use super::handler::Handler;
use crate::task::catalog::TaskTypes;
use crate::task::{Executor, Locality};

/// The registry of handlers: one per task-type name this replica runs.
#[derive(Clone, Default)]
pub struct HandlerRegistry {
    handlers: HashMap<String, Arc<dyn Handler>>,
    /// For each `openai` type: whether it has local routes, and external ones.
    routed: HashMap<String, (bool, bool)>,
}

/// The task types one claim loop takes, by claim statement.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClaimSets {
    /// Claimed as the loop's locality claims (queued, retrying; external: also fallbacks).
    pub all: Vec<String>,
    /// Claimed only when waiting for an external fallback: `openai` types with local
    /// routes, whose queued tasks must go local first.
    pub fallbacks: Vec<String>,
}

impl ClaimSets {
    pub fn is_empty(&self) -> bool {
        self.all.is_empty() && self.fallbacks.is_empty()
    }
}

impl HandlerRegistry {
    /// The handlers of `types` with default client options (no extra CA).
    pub fn new(
        types: &TaskTypes,
        custom: HashMap<String, Arc<dyn Handler>>,
    ) -> anyhow::Result<Self> {
        HandlerRegistry::with_options(types, custom, &ClientOptions::default())
    }

    /// The handlers of `types`: the built-in executors (upstream clients built with
    /// `options`), and from `custom` the handler of each type whose executor is
    /// `custom` (a missing one is an error).
    pub fn with_options(
        types: &TaskTypes,
        mut custom: HashMap<String, Arc<dyn Handler>>,
        options: &ClientOptions,
    ) -> anyhow::Result<Self> {
        let mut handlers: HashMap<String, Arc<dyn Handler>> = HashMap::new();
        let mut routed = HashMap::new();
        for task_type in types.iter() {
            let handler: Arc<dyn Handler> = match task_type.executor {
                Executor::Noop => Arc::new(executors::Noop),
                Executor::Sleep => Arc::new(executors::Sleep),
                Executor::Http => Arc::new(executors::Http::new(task_type, options)?),
                Executor::Openai => {
                    let kinds = (
                        task_type.has_routes(Locality::Local),
                        task_type.has_routes(Locality::External),
                    );
                    routed.insert(task_type.name.clone(), kinds);
                    Arc::new(executors::Openai::new(task_type, options)?)
                }
                Executor::Remote => continue,
                Executor::Custom => custom.remove(&task_type.name).ok_or_else(|| {
                    anyhow::anyhow!("no handler registered for {:?}", task_type.name)
                })?,
            };
            handlers.insert(task_type.name.clone(), handler);
        }
        Ok(HandlerRegistry { handlers, routed })
    }

    /// What a claim loop on `locality` takes. `routed_only` is for the external loop a
    /// local replica runs beside its local one: only `openai` types, so the other
    /// types keep the locality the replica was configured with.
    ///
    /// Local: every type except `openai` types without local routes. External: the
    /// other types (unless `routed_only`) and `openai` types with only external routes
    /// in full; `openai` types with both kinds only when they wait for a fallback.
    pub fn claim_sets(&self, locality: Locality, routed_only: bool) -> ClaimSets {
        let mut sets = ClaimSets::default();
        for name in self.names() {
            match (locality, self.routed.get(&name)) {
                (Locality::Local, Some((false, _))) => {}
                (Locality::Local, _) => sets.all.push(name),
                (Locality::External, None) if !routed_only => sets.all.push(name),
                (Locality::External, None) => {}
                (Locality::External, Some((true, true))) => sets.fallbacks.push(name),
                (Locality::External, Some((false, true))) => sets.all.push(name),
                (Locality::External, Some((_, false))) => {}
            }
        }
        sets
    }

    pub fn get(&self, task_type: &str) -> Option<&Arc<dyn Handler>> {
        self.handlers.get(task_type)
    }

    /// Names of the types this process runs in-process, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.handlers.keys().cloned().collect();
        names.sort();
        names
    }
}
