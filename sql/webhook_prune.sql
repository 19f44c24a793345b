-- Deletes at most $2 delivered or failed notifications finished more than $1 seconds
-- ago (the delivery log's retention). $1 retention seconds (float8), $2 limit.
-- Locks: the rows FOR UPDATE SKIP LOCKED, so pruners of several replicas never wait on
-- each other; the CTE bounds the rows (STYLE §3).
WITH doomed AS (
    SELECT id FROM tasklane.webhook_deliveries
    WHERE status <> 'pending'
      AND finished_at < now() - $1::float8 * interval '1 second'
    ORDER BY finished_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM tasklane.webhook_deliveries d USING doomed WHERE d.id = doomed.id
    RETURNING d.id
)
SELECT count(*) AS pruned FROM gone
