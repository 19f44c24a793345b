-- Who owns a task and its type, for the worker protocol's tenant check before a fenced
-- write. $1 id. Locks: none.
SELECT app, scope_id, task_type FROM tasklane.tasks WHERE id = $1
