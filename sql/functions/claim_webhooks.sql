-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.claim_webhooks, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- tasklane.claim_webhooks(p_limit bigint, p_default_rows bigint, p_claim_seconds double precision, p_endpoints uuid[], p_rows bigint[]):
-- Claims up to p_limit due webhook deliveries for this replica's deliverer
-- (sql/webhook_claim.sql): pending, due and not claimed by another, oldest first, at most
-- p_rows[i] per endpoint p_endpoints[i] and p_default_rows for any other endpoint, so one
-- slow endpoint cannot take the whole claim. Each claimed delivery gets a fresh claim
-- token, an attempt counted and a claim lasting p_claim_seconds; deliveries whose endpoint
-- is gone are deleted. Returns each claimed delivery with its endpoint's url, disabled
-- flag and live secrets (newest first).
-- The due rows are looked up by primary key with a condition that implies no partial
-- index, and the function plans generically (plan_cache_mode = force_generic_plan,
-- enable_seqscan off), so the plan stays the same whatever the outbox holds.
-- Locks: the claimed delivery rows (FOR UPDATE SKIP LOCKED: concurrent deliverers never
-- wait on each other).
--
-- tasklane.claim_webhooks(p_limit bigint, p_default_rows bigint, p_claim_seconds double precision, p_endpoints uuid[], p_rows bigint[], p_from timestamp with time zone):
-- Claims up to p_limit due webhook deliveries for this replica's deliverer
-- (sql/webhook_claim.sql): pending, due at or after p_from (NULL: any) and not claimed by
-- another, oldest first, at most p_rows[i] per endpoint p_endpoints[i] and p_default_rows
-- for any other endpoint, so one slow endpoint cannot take the whole claim. Each claimed
-- delivery gets a fresh claim token, an attempt counted and a claim lasting
-- p_claim_seconds; deliveries whose endpoint is gone are deleted. Returns each claimed
-- delivery with its endpoint's url, disabled flag and live secrets (newest first), and on
-- every row the earliest pending delivery at or after p_from, due or not, claimed or not
-- (pending_from, NULL when none), and the database's clock; when nothing is claimed, one
-- row of NULLs with those two. The caller's next claim starts at the earlier of
-- pending_from and a margin before the clock, so it never passes a pending row and steps
-- over only the dead entries after the oldest pending one.
-- The due rows are looked up by primary key with a condition that implies no partial
-- index, and the function plans generically (plan_cache_mode = force_generic_plan,
-- enable_seqscan off), so the plan stays the same whatever the outbox holds.
-- Locks: the claimed delivery rows (FOR UPDATE SKIP LOCKED: concurrent deliverers never
-- wait on each other).
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function claim_webhooks: migrations/V25__webhook_claim_generic_plan.sql, migrations/V30__webhook_claim_by_primary_key.sql, migrations/V33__function_comments.sql, migrations/V51__webhook_claim_from.sql
CREATE FUNCTION tasklane.claim_webhooks(p_limit bigint, p_default_rows bigint, p_claim_seconds double precision, p_endpoints uuid[], p_rows bigint[]) RETURNS TABLE(id uuid, endpoint_id uuid, task_id uuid, event text, created_at timestamp with time zone, attempts integer, claim_token uuid, url text, disabled boolean, secrets text[])
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH allowance AS (
        SELECT * FROM unnest(p_endpoints, p_rows) AS a(endpoint_id, rows)
    ), candidates AS (
        SELECT c.id, c.endpoint_id,
               row_number() OVER (PARTITION BY c.endpoint_id ORDER BY c.next_attempt_at) AS n
        FROM (SELECT id, endpoint_id, next_attempt_at
              FROM tasklane.webhook_deliveries
              WHERE status = 'pending' AND next_attempt_at <= now()
                AND (claimed_until IS NULL OR claimed_until <= now())
              ORDER BY next_attempt_at
              LIMIT p_limit * 4) c
    ), due AS (
        SELECT d.id, d.endpoint_id
        FROM tasklane.webhook_deliveries d
        WHERE d.id = ANY (ARRAY(SELECT c.id FROM candidates c
                                LEFT JOIN allowance a ON a.endpoint_id = c.endpoint_id
                                WHERE c.n <= coalesce(a.rows, p_default_rows)))
          -- Pending, written so that it implies no partial index's predicate (status
          -- is NOT NULL: the concatenation only hides the column from the planner), so
          -- the primary key is the only index for this lookup (V30).
          AND d.status || '' = 'pending' AND d.next_attempt_at <= now()
          AND (d.claimed_until IS NULL OR d.claimed_until <= now())
        ORDER BY d.next_attempt_at
        LIMIT p_limit
        FOR UPDATE OF d SKIP LOCKED
    ), targets AS (
        SELECT e.id, e.url, e.disabled,
               coalesce(array_agg(s.secret ORDER BY s.expires_at DESC NULLS FIRST)
                        FILTER (WHERE s.id IS NOT NULL), '{}') AS secrets
        FROM tasklane.webhook_endpoints e
        LEFT JOIN tasklane.webhook_secrets s
               ON s.endpoint_id = e.id AND (s.expires_at IS NULL OR s.expires_at > now())
        WHERE e.id IN (SELECT endpoint_id FROM due)
        GROUP BY e.id
    ), orphans AS (
        DELETE FROM tasklane.webhook_deliveries d
        WHERE d.id = ANY (ARRAY(SELECT due.id FROM due
                                WHERE due.endpoint_id NOT IN (SELECT t.id FROM targets t)))
    ), claimed AS (
        UPDATE tasklane.webhook_deliveries d
        SET attempts = d.attempts + 1, claim_token = (SELECT gen_random_uuid()),
            claimed_until = now() + p_claim_seconds * interval '1 second'
        WHERE d.id = ANY (ARRAY(SELECT due.id FROM due
                                WHERE due.endpoint_id IN (SELECT t.id FROM targets t)))
        RETURNING d.id, d.endpoint_id, d.task_id, d.event, d.created_at, d.attempts, d.claim_token
    )
    SELECT c.*, t.url, t.disabled, t.secrets
    FROM claimed c
    JOIN targets t ON t.id = c.endpoint_id;
END
$$;

-- function claim_webhooks: migrations/V25__webhook_claim_generic_plan.sql, migrations/V30__webhook_claim_by_primary_key.sql, migrations/V33__function_comments.sql, migrations/V51__webhook_claim_from.sql
CREATE FUNCTION tasklane.claim_webhooks(p_limit bigint, p_default_rows bigint, p_claim_seconds double precision, p_endpoints uuid[], p_rows bigint[], p_from timestamp with time zone) RETURNS TABLE(id uuid, endpoint_id uuid, task_id uuid, event text, created_at timestamp with time zone, attempts integer, claim_token uuid, url text, disabled boolean, secrets text[], pending_from timestamp with time zone, clock timestamp with time zone)
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH allowance AS (
        SELECT * FROM unnest(p_endpoints, p_rows) AS a(endpoint_id, rows)
    ), candidates AS (
        SELECT c.id, c.endpoint_id,
               row_number() OVER (PARTITION BY c.endpoint_id ORDER BY c.next_attempt_at) AS n
        FROM (SELECT id, endpoint_id, next_attempt_at
              FROM tasklane.webhook_deliveries
              WHERE status = 'pending'
                AND next_attempt_at >= coalesce(p_from, '-infinity')
                AND next_attempt_at <= now()
                AND (claimed_until IS NULL OR claimed_until <= now())
              ORDER BY next_attempt_at
              LIMIT p_limit * 4) c
    ), due AS (
        SELECT d.id, d.endpoint_id
        FROM tasklane.webhook_deliveries d
        WHERE d.id = ANY (ARRAY(SELECT c.id FROM candidates c
                                LEFT JOIN allowance a ON a.endpoint_id = c.endpoint_id
                                WHERE c.n <= coalesce(a.rows, p_default_rows)))
          -- Pending, written so that it implies no partial index's predicate (status
          -- is NOT NULL: the concatenation only hides the column from the planner), so
          -- the primary key is the only index for this lookup.
          AND d.status || '' = 'pending' AND d.next_attempt_at <= now()
          AND (d.claimed_until IS NULL OR d.claimed_until <= now())
        ORDER BY d.next_attempt_at
        LIMIT p_limit
        FOR UPDATE OF d SKIP LOCKED
    ), targets AS (
        SELECT e.id, e.url, e.disabled,
               coalesce(array_agg(s.secret ORDER BY s.expires_at DESC NULLS FIRST)
                        FILTER (WHERE s.id IS NOT NULL), '{}') AS secrets
        FROM tasklane.webhook_endpoints e
        LEFT JOIN tasklane.webhook_secrets s
               ON s.endpoint_id = e.id AND (s.expires_at IS NULL OR s.expires_at > now())
        WHERE e.id IN (SELECT endpoint_id FROM due)
        GROUP BY e.id
    ), orphans AS (
        DELETE FROM tasklane.webhook_deliveries d
        WHERE d.id = ANY (ARRAY(SELECT due.id FROM due
                                WHERE due.endpoint_id NOT IN (SELECT t.id FROM targets t)))
    ), claimed AS (
        UPDATE tasklane.webhook_deliveries d
        SET attempts = d.attempts + 1, claim_token = (SELECT gen_random_uuid()),
            claimed_until = now() + p_claim_seconds * interval '1 second'
        WHERE d.id = ANY (ARRAY(SELECT due.id FROM due
                                WHERE due.endpoint_id IN (SELECT t.id FROM targets t)))
        RETURNING d.id, d.endpoint_id, d.task_id, d.event, d.created_at, d.attempts, d.claim_token
    ), pending AS (
        -- The statement's snapshot: the rows just claimed are still pending here, and
        -- keep the start until they are settled.
        SELECT min(w.next_attempt_at) AS pending_from
        FROM (SELECT d.next_attempt_at
              FROM tasklane.webhook_deliveries d
              WHERE d.status = 'pending'
                AND d.next_attempt_at >= coalesce(p_from, '-infinity')
              ORDER BY d.next_attempt_at
              LIMIT 1) w
    )
    SELECT c.*, t.url, t.disabled, t.secrets, p.pending_from, now()
    FROM pending p
    LEFT JOIN (claimed c JOIN targets t ON t.id = c.endpoint_id) ON true;
END
$$;
