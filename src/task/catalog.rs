//! The task types one deployment knows, by name: what submit validates against, what
//! claims may name, and where a settlement finds its type's backoff. Pure data; the
//! in-process handlers of the runnable types are the worker's (`worker::HandlerRegistry`).

use std::collections::BTreeMap;

use super::backoff::Backoff;
use super::task_type::TaskType;

/// Registered task types by name.
#[derive(Debug, Clone, Default)]
pub struct TaskTypes {
    types: BTreeMap<String, TaskType>,
}

impl TaskTypes {
    /// The catalog of `types` (names are unique: `TaskTypesFile::parse` refuses
    /// duplicates; a later duplicate here replaces an earlier one).
    pub fn new(types: impl IntoIterator<Item = TaskType>) -> Self {
        TaskTypes {
            types: types.into_iter().map(|t| (t.name.clone(), t)).collect(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&TaskType> {
        self.types.get(name)
    }

    /// Every registered type, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &TaskType> {
        self.types.values()
    }

    /// Names of every registered type, sorted.
    pub fn names(&self) -> Vec<String> {
        self.types.keys().cloned().collect()
    }

    /// The backoff of `name`'s retries; the default for a type this process does not
    /// know (a task claimed by a remote worker of another deployment's type list).
    pub fn backoff(&self, name: &str) -> Backoff {
        self.get(name).map(TaskType::backoff).unwrap_or_default()
    }

    /// How long tasks of `name` may wait for open circuits in a row (the default for a
    /// type this process does not know).
    pub fn circuit_wait(&self, name: &str) -> std::time::Duration {
        std::time::Duration::from_secs(
            self.get(name)
                .map_or(super::task_type::DEFAULT_CIRCUIT_WAIT_SECONDS, |t| {
                    t.circuit_wait_seconds
                }),
        )
    }

    /// Whether any of `names` claims through a resource slot pool.
    pub fn any_needs_slots(&self, names: &[String]) -> bool {
        names
            .iter()
            .any(|n| self.get(n).is_some_and(|t| t.resource.is_some()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::Executor;

    #[test]
    fn names_are_sorted_and_unknown_types_get_the_default_backoff() {
        let mut slow = TaskType::new("slow", Executor::Sleep);
        slow.backoff_base_ms = 7;
        slow.resource = Some("gpu".into());
        let types = TaskTypes::new([slow, TaskType::new("fast", Executor::Noop)]);
        assert_eq!(types.names(), ["fast", "slow"]);
        assert_eq!(types.backoff("slow").base.as_millis(), 7);
        assert_eq!(types.backoff("nope"), Backoff::default());
        assert!(types.any_needs_slots(&["fast".into(), "slow".into()]));
        assert!(!types.any_needs_slots(&["fast".into(), "nope".into()]));
    }
}
