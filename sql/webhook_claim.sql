-- Claims due notifications for delivery: at most $1, at most $2 per endpoint, none of
-- the endpoints in $4 (those this replica already has at its per-endpoint bound).
-- A claim moves next_attempt_at $3 seconds ahead and sets a fresh claim_token, so a
-- deliverer that dies mid-delivery leaves rows that come due again by themselves
-- (delivery is at least once), and counts the attempt.
-- $1 limit, $2 per-endpoint limit, $3 claim seconds (float8), $4 endpoint ids to skip.
-- Locks: the claimed rows FOR UPDATE SKIP LOCKED (briefly: the statement commits
-- alone). The window over a bounded candidate list cannot carry FOR UPDATE itself, so
-- the lock is taken in the next CTE, which bounds the rows (STYLE §3).
WITH candidates AS (
    SELECT c.id,
           row_number() OVER (PARTITION BY c.endpoint_id ORDER BY c.next_attempt_at) AS n
    FROM (SELECT id, endpoint_id, next_attempt_at
          FROM tasklane.webhook_deliveries
          WHERE status = 'pending' AND next_attempt_at <= now()
            AND endpoint_id <> ALL ($4::uuid[])
          ORDER BY next_attempt_at
          LIMIT $1::bigint * 4) c
), due AS (
    SELECT d.id
    FROM tasklane.webhook_deliveries d
    JOIN candidates c ON c.id = d.id AND c.n <= $2::bigint
    WHERE d.status = 'pending' AND d.next_attempt_at <= now()
    ORDER BY d.next_attempt_at
    LIMIT $1::bigint
    FOR UPDATE OF d SKIP LOCKED
)
UPDATE tasklane.webhook_deliveries d
SET attempts = d.attempts + 1, claim_token = gen_random_uuid(),
    next_attempt_at = now() + $3::float8 * interval '1 second'
FROM due
WHERE d.id = due.id
RETURNING d.id, d.endpoint_id, d.task_id, d.event, d.created_at, d.attempts, d.claim_token
