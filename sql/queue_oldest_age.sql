-- Age of the oldest claimable task by type, for the metrics sampler: seconds since the
-- earliest run_at among tasks a worker could take now (queued, a retry due, or waiting
-- for an external worker), 0 for a registered type with none. A queue that drains keeps
-- it near the pickup latency; one that does not lets it grow without bound.
-- No parameters. Locks: none.
WITH waiting AS (
    SELECT task_type, min(run_at) AS since
    FROM tasklane.task_queue
    WHERE state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
      AND run_at <= now()
    GROUP BY task_type
)
SELECT coalesce(w.task_type, r.name) AS task_type,
       coalesce(extract(epoch FROM now() - w.since), 0)::float8 AS seconds
FROM waiting w
FULL JOIN tasklane.registered_task_types r ON r.name = w.task_type
ORDER BY 1
