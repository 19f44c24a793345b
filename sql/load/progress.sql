-- Progress of a load run: tasks of app $1 by whether they are finished, and the time
-- the last one finished (database clock).
-- $1 app. Locks: none.
SELECT count(*) FILTER (WHERE state IN ('succeeded', 'failed', 'cancelled')) AS finished,
       count(*) FILTER (WHERE state = 'failed') AS failed,
       count(*) AS total,
       max(finished_at) AS last_finished_at,
       min(started_at) AS first_started_at
FROM tasklane.tasks
WHERE app = $1
