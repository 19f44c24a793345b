-- Deletes at most $2 delivered or failed notifications finished more than $1 seconds
-- ago (the delivery log's retention). $1 retention seconds (float8), $2 limit.
-- Each endpoint's log is read by webhook_deliveries_log (no index on finished_at, one
-- entry fewer for every settle to write): an id is a UUIDv7 taken when the row is
-- written, before it can finish, so a row finished before the cutoff has an id below
-- `bound`, the first UUIDv7 of the millisecond after the cutoff. Every delivery has its
-- endpoint (deleting an endpoint deletes its log, sql/webhook_endpoint_delete.sql).
-- Locks: the rows FOR UPDATE SKIP LOCKED, so pruners of several replicas never wait on
-- each other; the CTEs bound the rows.
WITH cutoff AS (
    SELECT now() - $1::float8 * interval '1 second' AS at
), bound AS (
    SELECT c.at,
           encode(substring(int8send((extract(epoch FROM c.at) * 1000)::bigint + 1) FROM 3)
                  || '\x00000000000000000000'::bytea, 'hex')::uuid AS id
    FROM cutoff c
), doomed AS (
    SELECT o.id
    FROM bound b
    CROSS JOIN tasklane.webhook_endpoints e
    CROSS JOIN LATERAL (
        SELECT d.id
        FROM tasklane.webhook_deliveries d
        WHERE d.endpoint_id = e.id AND d.id < b.id
          AND d.status <> 'pending' AND d.finished_at < b.at
        ORDER BY d.id
        LIMIT $2
        FOR UPDATE SKIP LOCKED) o
    LIMIT $2
), gone AS (
    DELETE FROM tasklane.webhook_deliveries d USING doomed WHERE d.id = doomed.id
    RETURNING d.id
)
SELECT count(*) AS pruned FROM gone
