-- Queue depth of the admin overview: non-terminal tasks by state and type.
-- No parameters. Locks: none.
-- Counted on the mirror, which holds exactly the live tasks (same commit as tasks).
SELECT state, task_type, count(*) AS count
FROM tasklane.task_queue
GROUP BY state, task_type
ORDER BY state, task_type
