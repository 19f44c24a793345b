-- Queue depth of the admin overview: non-terminal tasks by state and type.
-- No parameters. Locks: none.
SELECT state, task_type, count(*) AS count
FROM tasklane.tasks
WHERE state IN ('queued', 'running', 'cancelling', 'waiting_for_retry', 'waiting_for_external_fallback')
GROUP BY state, task_type
ORDER BY state, task_type
