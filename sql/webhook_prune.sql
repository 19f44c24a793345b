-- Deletes at most $2 delivered or failed notifications finished more than $1 seconds
-- ago (the delivery log's retention). $1 retention seconds (float8), $2 limit, $3 the
-- least id to consider (nullable: from the start). Returns how many were deleted and
-- the greatest id among them (where the next pass may start).
-- The log is read in id order on its primary key (no index on finished_at, one entry
-- fewer for every settle to write): an id is a UUIDv7 taken when the row is written,
-- before it can finish, so a row finished before the cutoff has an id below `bound`,
-- the first UUIDv7 of the millisecond after the cutoff. The scan starts at $3: the
-- index keeps an entry for every notification deleted while an older snapshot is open
-- (a long pg_dump, a forgotten transaction), and a pass from the start would step over
-- all of them, every pass.
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
    SELECT d.id
    FROM tasklane.webhook_deliveries d
    WHERE d.id >= coalesce($3::uuid, '00000000-0000-0000-0000-000000000000')
      AND d.id < (SELECT b.id FROM bound b)
      AND d.status <> 'pending' AND d.finished_at < (SELECT b.at FROM bound b)
    ORDER BY d.id
    LIMIT $2
    FOR UPDATE OF d SKIP LOCKED
), gone AS (
    -- By id alone: a join to the doomed rows may be planned as a walk of the whole
    -- primary key.
    DELETE FROM tasklane.webhook_deliveries d
    WHERE d.id = ANY (ARRAY(SELECT o.id FROM doomed o))
    RETURNING d.id
)
SELECT count(*) AS pruned, (SELECT g.id FROM gone g ORDER BY g.id DESC LIMIT 1) AS reached
FROM gone
