-- V8: pausing a task type. While a type's row is here no replica and no remote worker
-- claims its tasks (every claim statement skips them); submits are still accepted and
-- queued, and the queue deadline still applies. Cluster-wide, like task-type names.
CREATE TABLE tasklane.paused_task_types (
    task_type text PRIMARY KEY CHECK (length(task_type) BETWEEN 1 AND 200),
    paused_at timestamptz NOT NULL DEFAULT now()
);
