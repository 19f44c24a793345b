-- V51: the deliverer's claim reads the due index from where the rows still to send
-- begin, not from its front, and says where that is for the next claim.
-- Forward-only: never edit once landed.
--
-- A delivered notification leaves the due index's predicate (status = 'pending'), and
-- under a snapshot held open (a long pg_dump, a forgotten transaction) its entry stays
-- until the snapshot ends. The claim read the index from its front: in the soak
-- (1,000 tasks/s, every task notified, a REPEATABLE READ transaction held for 10
-- minutes), each claim stepped over every notification delivered under the hold,
-- 23,300 pages a claim in the hold's first five minutes and 37,150 in its second, a
-- quarter of the database's statement time. A kept start like the sweeps' (the
-- greatest key got to) does not fit the outbox: a row left for its endpoint's window,
-- released unsent or claimed by a deliverer that died keeps its first next_attempt_at
-- and is due again behind any such start.
--
-- This overload takes p_from, where the caller's claims start (NULL: the front), and
-- returns beside the claimed rows the earliest pending row at or after it, whether due,
-- claimed or waiting for its endpoint (pending_from, NULL when there is none), and the
-- database's clock: the caller's next claim starts at the earlier of that row and a
-- margin before the clock (rows are written with their transaction's start time, so a
-- transaction that began a moment before and commits after is still ahead). No row
-- that is pending is ever behind the start, and a claim steps over the dead entries
-- between the oldest row still pending and now, not those of the whole hold. When
-- nothing is claimed the function returns one row of NULLs with pending_from and
-- clock, so the caller always learns them. The five-argument claim stays for the
-- previous release's binaries.

CREATE FUNCTION tasklane.claim_webhooks(p_limit bigint, p_default_rows bigint,
                                        p_claim_seconds double precision,
                                        p_endpoints uuid[], p_rows bigint[],
                                        p_from timestamptz)
RETURNS TABLE(id uuid, endpoint_id uuid, task_id uuid, event text,
              created_at timestamptz, attempts integer, claim_token uuid, url text,
              disabled boolean, secrets text[], pending_from timestamptz,
              clock timestamptz)
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

COMMENT ON FUNCTION tasklane.claim_webhooks(bigint, bigint, double precision, uuid[], bigint[], timestamptz) IS
$$Claims up to p_limit due webhook deliveries for this replica's deliverer
(sql/webhook_claim.sql): pending, due at or after p_from (NULL: any) and not claimed by
another, oldest first, at most p_rows[i] per endpoint p_endpoints[i] and p_default_rows
for any other endpoint, so one slow endpoint cannot take the whole claim. Each claimed
delivery gets a fresh claim token, an attempt counted and a claim lasting
p_claim_seconds; deliveries whose endpoint is gone are deleted. Returns each claimed
delivery with its endpoint's url, disabled flag and live secrets (newest first), and on
every row the earliest pending delivery at or after p_from, due or not, claimed or not
(pending_from, NULL when none), and the database's clock; when nothing is claimed, one
row of NULLs with those two. The caller's next claim starts at the earlier of
pending_from and a margin before the clock, so it never passes a pending row and steps
over only the dead entries after the oldest pending one.
The due rows are looked up by primary key with a condition that implies no partial
index, and the function plans generically (plan_cache_mode = force_generic_plan,
enable_seqscan off), so the plan stays the same whatever the outbox holds.
Locks: the claimed delivery rows (FOR UPDATE SKIP LOCKED: concurrent deliverers never
wait on each other).$$;
