-- Paused task types of the admin overview, oldest pause first. No parameters.
-- Locks: none.
SELECT task_type, paused_at FROM tasklane.paused_task_types ORDER BY paused_at, task_type
