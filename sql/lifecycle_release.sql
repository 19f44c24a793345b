-- Releases a task by identity through the SQL API, in the caller's transaction.
-- $1 app, $2 scope_id, $3 effect_key, $4 usage_subject (nullable).
-- Returns released_at (the first one on repeats), NULL when no such task.
-- Locks: the task row (see sql/api/release_task.sql).
SELECT tasklane.release_task_at($1, $2, $3, $4) AS released_at
