-- The console's chart: tasks submitted and finished (by terminal state) in each of the
-- last 60 minutes, the current one included, oldest first; every minute has a row.
-- Submitted: bucketed by created_at; the ids are UUIDv7 (time-ordered, from the
-- replica's clock), so a primary-key range from 10 minutes before the window's start
-- bounds the scan to recent tasks whatever the replicas' clock skew. Finished: by
-- finished_at, which no index covers, so this part reads the whole tasks table: the
-- console asks once a minute (see docs/console.md).
-- No parameters. Locks: none.
WITH bounds AS (
    SELECT date_trunc('minute', now()) - interval '59 minutes' AS since
), minutes AS (
    SELECT generate_series(since, since + interval '59 minutes', interval '1 minute') AS minute
    FROM bounds
), submitted AS (
    SELECT date_trunc('minute', t.created_at) AS minute, count(*) AS n
    FROM tasklane.tasks t, bounds b
    WHERE t.id >= (lpad(to_hex(floor(extract(epoch FROM b.since - interval '10 minutes') * 1000)::bigint), 12, '0')
                   || '00000000000000000000')::uuid
      AND t.created_at >= b.since
    GROUP BY 1
), finished AS (
    SELECT date_trunc('minute', t.finished_at) AS minute,
           count(*) FILTER (WHERE t.state = 'succeeded') AS succeeded,
           count(*) FILTER (WHERE t.state = 'failed') AS failed,
           count(*) FILTER (WHERE t.state = 'cancelled') AS cancelled
    FROM tasklane.tasks t, bounds b
    WHERE t.finished_at >= b.since
    GROUP BY 1
)
SELECT m.minute,
       coalesce(s.n, 0)::bigint AS submitted,
       coalesce(f.succeeded, 0)::bigint AS succeeded,
       coalesce(f.failed, 0)::bigint AS failed,
       coalesce(f.cancelled, 0)::bigint AS cancelled
FROM minutes m
LEFT JOIN submitted s ON s.minute = m.minute
LEFT JOIN finished f ON f.minute = m.minute
ORDER BY m.minute
