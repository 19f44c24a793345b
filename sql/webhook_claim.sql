-- Claims due notifications for delivery: at most $1 in all and, per endpoint, at most
-- its allowance: $5 rows for the endpoints $4 lists (the deliverer's window for the
-- endpoint less the rows it holds of it, in flight or waiting for a slot), $2 for any
-- other.
-- A claim sets claimed_until $3 seconds ahead and a fresh claim_token, so a deliverer
-- that dies mid-delivery leaves rows that come due again by themselves (delivery is at
-- least once), and counts the attempt. No index names those columns: the claim is a
-- HOT update (V21). A row is due when next_attempt_at has come and no claim holds it.
-- A due row whose endpoint is gone (deleted while a terminal transition was writing
-- it: no foreign key since V15) is deleted with the endpoint's log instead.
-- Returns the claimed rows with where and how to send them: the endpoint's URL,
-- whether it is disabled, and its live secrets (current first).
-- $1 limit, $2 allowance of an endpoint not listed, $3 claim seconds (float8),
-- $4 uuid[] endpoints, $5 int8[] their allowances.
-- Locks: the claimed rows FOR UPDATE SKIP LOCKED (briefly: the statement commits
-- alone). The window over a bounded candidate list cannot carry FOR UPDATE itself, so
-- the lock is taken in the next CTE, which bounds the rows (STYLE §3).
-- Rows are found again by `id = ANY (ARRAY(...))`, not by a join: joined, the planner
-- costed a few dozen primary-key probes above one scan of the whole outbox (delivered
-- history included) and hashed it, 13.7 ms a claim beside 60,000 rows against 3.2 ms
-- (EXPLAIN ANALYZE); an array of ids is always probed by the primary key.
WITH allowance AS (
    SELECT * FROM unnest($4::uuid[], $5::int8[]) AS a(endpoint_id, rows)
), candidates AS (
    SELECT c.id, c.endpoint_id,
           row_number() OVER (PARTITION BY c.endpoint_id ORDER BY c.next_attempt_at) AS n
    FROM (SELECT id, endpoint_id, next_attempt_at
          FROM tasklane.webhook_deliveries
          WHERE status = 'pending' AND next_attempt_at <= now()
            AND (claimed_until IS NULL OR claimed_until <= now())
          ORDER BY next_attempt_at
          LIMIT $1::bigint * 4) c
), due AS (
    SELECT d.id, d.endpoint_id
    FROM tasklane.webhook_deliveries d
    WHERE d.id = ANY (ARRAY(SELECT c.id FROM candidates c
                            LEFT JOIN allowance a ON a.endpoint_id = c.endpoint_id
                            WHERE c.n <= coalesce(a.rows, $2::bigint)))
      AND d.status = 'pending' AND d.next_attempt_at <= now()
      AND (d.claimed_until IS NULL OR d.claimed_until <= now())
    ORDER BY d.next_attempt_at
    LIMIT $1::bigint
    FOR UPDATE OF d SKIP LOCKED
), orphans AS (
    DELETE FROM tasklane.webhook_deliveries d
    WHERE d.id = ANY (ARRAY(SELECT due.id FROM due
                            WHERE NOT EXISTS (SELECT 1 FROM tasklane.webhook_endpoints e
                                              WHERE e.id = due.endpoint_id)))
), claimed AS (
    UPDATE tasklane.webhook_deliveries d
    SET attempts = d.attempts + 1, claim_token = gen_random_uuid(),
        claimed_until = now() + $3::float8 * interval '1 second'
    WHERE d.id = ANY (ARRAY(SELECT due.id FROM due
                            WHERE EXISTS (SELECT 1 FROM tasklane.webhook_endpoints e
                                          WHERE e.id = due.endpoint_id)))
    RETURNING d.id, d.endpoint_id, d.task_id, d.event, d.created_at, d.attempts, d.claim_token
), targets AS (
    SELECT e.id, e.url, e.disabled,
           coalesce(array_agg(s.secret ORDER BY s.expires_at DESC NULLS FIRST)
                    FILTER (WHERE s.id IS NOT NULL), '{}') AS secrets
    FROM tasklane.webhook_endpoints e
    LEFT JOIN tasklane.webhook_secrets s
           ON s.endpoint_id = e.id AND (s.expires_at IS NULL OR s.expires_at > now())
    WHERE e.id IN (SELECT endpoint_id FROM due)
    GROUP BY e.id
)
SELECT c.*, t.url, t.disabled, t.secrets
FROM claimed c
JOIN targets t ON t.id = c.endpoint_id
