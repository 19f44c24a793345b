//! V4: the application lifecycle of DESIGN §5 — scope fences, the indexes the pruning
//! sweep and reconciliation read, and the SQL API applications call in their own
//! transactions (`tasklane.release_task`, `delete_tasks`, `list_unreleased_sources`,
//! `lift_fence`).
//!
//! A Rust migration so the function sources live once, in `sql/api/*.sql`, and both
//! this migration and a reader of `sql/` see the same text. refinery checksums the
//! string returned here: once V4 has landed those files are frozen like any migration;
//! a later change to a function is a new `V<n>` that `CREATE OR REPLACE`s it.
//!
//! The functions are SECURITY DEFINER with a fixed search_path, and EXECUTE is revoked
//! from PUBLIC, so a deployment grants them to an application role that cannot touch
//! the tables (see docs/lifecycle.md).

/// Fences and indexes (DDL).
const SCHEMA: &str = r#"
-- A fenced scope refuses new tasks (410 scope_deleted) until the fence is lifted.
-- Written by tasklane.delete_tasks under the exclusive owner lock; read by submit under
-- the shared one.
CREATE TABLE tasklane.scope_fences (
    app       text NOT NULL,
    scope_id  text NOT NULL,
    fenced_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app, scope_id)
);

-- The pruning sweep's scan: terminal, released and finished rows, oldest first.
CREATE INDEX tasks_prunable ON tasklane.tasks ((greatest(released_at, finished_at)))
    WHERE released_at IS NOT NULL AND finished_at IS NOT NULL
      AND state IN ('succeeded', 'failed', 'cancelled');

-- Reconciliation: distinct (scope, source) pairs with unreleased tasks, in byte order,
-- a missing source as '' (sql/api/list_unreleased_sources.sql pages by row comparison).
CREATE INDEX tasks_unreleased ON tasklane.tasks
    (app, (scope_id COLLATE "C"), (coalesce(source_id, '') COLLATE "C"))
    WHERE released_at IS NULL;
"#;

/// Only roles granted EXECUTE (docs/lifecycle.md) may call the SECURITY DEFINER API.
const REVOKE: &str = r#"
REVOKE ALL ON FUNCTION tasklane.release_task_at(text, text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION tasklane.release_task(text, text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION tasklane.delete_tasks(text, text, text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION tasklane.lift_fence(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION tasklane.list_unreleased_sources(text, text, text, integer) FROM PUBLIC;
"#;

pub fn migration() -> String {
    [
        SCHEMA,
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/sql/api/release_task.sql")),
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/sql/api/delete_tasks.sql")),
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/sql/api/lift_fence.sql")),
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/sql/api/list_unreleased_sources.sql")),
        REVOKE,
    ]
    .join("\n")
}
