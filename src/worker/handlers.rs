//! The in-process handler of each task type this replica runs: built-in executors for
//! `noop`, `sleep` and `http`, and the application's own for `custom` types. `remote`
//! types have none here (remote workers run them over the worker protocol).

use std::collections::HashMap;
use std::sync::Arc;

use super::executors;
use super::handler::Handler;
use crate::task::catalog::TaskTypes;
use crate::task::Executor;

/// Handlers by task-type name.
#[derive(Clone, Default)]
pub struct Handlers {
    handlers: HashMap<String, Arc<dyn Handler>>,
}

impl Handlers {
    /// The handlers of `types`: the built-in executors, and from `custom` the handler of
    /// each type whose executor is `custom` (a missing one is an error).
    pub fn new(
        types: &TaskTypes,
        mut custom: HashMap<String, Arc<dyn Handler>>,
    ) -> anyhow::Result<Self> {
        let mut handlers: HashMap<String, Arc<dyn Handler>> = HashMap::new();
        for task_type in types.iter() {
            let handler: Arc<dyn Handler> = match task_type.executor {
                Executor::Noop => Arc::new(executors::Noop),
                Executor::Sleep => Arc::new(executors::Sleep),
                Executor::Http => Arc::new(executors::Http::new(task_type)?),
                Executor::Remote => continue,
                Executor::Custom => custom.remove(&task_type.name).ok_or_else(|| {
                    anyhow::anyhow!("no handler registered for {:?}", task_type.name)
                })?,
            };
            handlers.insert(task_type.name.clone(), handler);
        }
        Ok(Handlers { handlers })
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
