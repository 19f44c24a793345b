-- Queue depth for the metrics sampler: non-terminal tasks by type and state, with a
-- zero row for every registered task type in every non-terminal state it has none in,
-- so a quiet queue still reports its series (a graph shows 0, not "no data", and an
-- alert on a missing series means what it says). Types no longer registered appear
-- while they have live tasks.
-- No parameters. Locks: none.
-- Counted on the mirror, which holds exactly the live tasks (same commit as tasks).
WITH counted AS (
    SELECT task_type, state, count(*) AS count
    FROM tasklane.task_queue
    GROUP BY task_type, state
), every_state AS (
    SELECT r.name AS task_type, s.state
    FROM tasklane.registered_task_types r
    CROSS JOIN (VALUES ('queued'), ('waiting_for_retry'), ('waiting_for_external_fallback'),
                       ('running'), ('cancelling')) AS s (state)
)
SELECT coalesce(c.task_type, e.task_type) AS task_type, coalesce(c.state, e.state) AS state,
       coalesce(c.count, 0)::int8 AS count
FROM counted c
FULL JOIN every_state e ON e.task_type = c.task_type AND e.state = c.state
ORDER BY 1, 2
