//! The application service and in-process workers on a test database.

use std::collections::HashMap;
use std::sync::Arc;

use tasklane::service::{Tasklane, Wakeup};
use tasklane::store::Pool;
use tasklane::task::{TaskType, TaskTypes};
use tasklane::worker::{Handler, HandlerRegistry, Worker, WorkerConfig};

/// A service on `pool` that knows `types` (1 MiB input limit).
pub fn tasklane(pool: Pool, types: impl IntoIterator<Item = TaskType>) -> Tasklane {
    Tasklane::new(
        pool,
        Arc::new(TaskTypes::new(types)),
        Wakeup::default(),
        1 << 20,
    )
}

/// A claim loop on `pool` running `types`, with `custom` handlers for `custom` types.
pub fn worker(
    pool: Pool,
    types: Vec<TaskType>,
    custom: HashMap<String, Arc<dyn Handler>>,
    config: WorkerConfig,
) -> Worker {
    let tasklane = tasklane(pool, types);
    let handlers = HandlerRegistry::new(tasklane.task_types(), custom).expect("handlers");
    Worker::new(config, tasklane, Arc::new(handlers))
}
