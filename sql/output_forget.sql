-- Deletes the text so far of attempts that ended. $1 task ids uuid[], $2 attempts
-- int[]. Locks: the rows it deletes.
DELETE FROM tasklane.task_output o
USING unnest($1::uuid[], $2::int[]) AS t (task_id, attempt)
WHERE o.task_id = t.task_id AND o.attempt = t.attempt
