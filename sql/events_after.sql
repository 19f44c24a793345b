-- A task's events after a seq, ascending. $1 task id, $2 after seq, $3 limit.
-- Locks: none.
SELECT seq, type, data, at FROM tasklane.task_events
WHERE task_id = $1 AND seq > $2
ORDER BY seq
LIMIT $3
