-- When each of the given tasks was created, claimed (its first task.running event)
-- and finished, for pickup and end-to-end latencies.
-- $1 ids uuid[]. Locks: none.
SELECT t.id, t.created_at,
       (SELECT e.at FROM tasklane.task_events e
        WHERE e.task_id = t.id AND e.type = 'task.running' ORDER BY e.seq LIMIT 1) AS running_at,
       t.finished_at
FROM tasklane.tasks t
WHERE t.id = ANY($1)
