-- Looks up a task by its identity (app, scope, effect key, usage subject; a NULL subject
-- is one value, as in the tasks_identity constraint).
-- $1 app, $2 scope_id, $3 effect_key, $4 usage_subject (nullable).
-- Locks: none.
SELECT v.*, t.request_digest
FROM tasklane.tasks t
JOIN tasklane.task_views v USING (id)
WHERE t.app = $1 AND t.scope_id = $2 AND t.effect_key = $3
  AND (t.usage_subject = $4 OR (t.usage_subject IS NULL AND $4::text IS NULL))
