-- Who owns a task, its type and its trace context, for the worker protocol's tenant
-- check before a fenced write (the settlement's backoff and span need the other two).
-- $1 id. Locks: none.
SELECT app, scope_id, task_type, traceparent FROM tasklane.tasks WHERE id = $1
