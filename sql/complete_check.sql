-- Before a remote worker's batched completion (complete_many.sql): of the ids given,
-- those that exist and are the owner's, with their task type (whose output schema the
-- result must match) and whether the attempt's deadline has passed (a completion is
-- then a lost lease, as complete.sql's fence says: the attempt is the deadline sweep's).
-- $1 ids uuid[], $2 app, $3 scope_id (NULL: any scope of the app). Locks: none.
SELECT id, task_type, coalesce(attempt_deadline_at <= now(), false) AS overdue
FROM tasklane.tasks
WHERE id = ANY($1::uuid[]) AND app = $2 AND ($3::text IS NULL OR scope_id = $3::text)
