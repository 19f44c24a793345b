-- V30: the deliverer's claim finds its chosen rows again by primary key, whatever the
-- outbox's statistics. Forward-only: never edit once landed.
--
-- The claim picks its rows from a bounded candidate list (the due index in order, a
-- window per endpoint), then finds them again, with `id = ANY (...)`, to lock them.
-- That second lookup repeated the candidates' conditions, `status = 'pending'` among
-- them, which is the due index's predicate: its generic plan, made while the outbox
-- was small, read the whole due index with a bitmap scan and tested every pending row
-- against the id array. In the webhooks bench (10,000 tasks, one endpoint) deliveries
-- fall behind the drain and thousands of rows are pending: each claim of about 100
-- rows filtered 3,500-4,700 of them, 15 of its 16 ms (auto_explain), and the claim
-- was the deliverer's costliest statement (pg_stat_statements: 264 ms of the
-- deliverer's 454 ms of executor time for the 10,000 deliveries).
-- Written `status || '' = 'pending'` (the same rows: status is NOT NULL), the condition
-- implies neither the due index's predicate nor the task index's (status <>
-- 'delivered'; a first try, `status NOT IN ('delivered', 'failed')`, implied that one,
-- and the lookup became a full scan of the task index), and the primary key is the only
-- index left for the lookup: one probe per chosen row. The locked rows are rechecked
-- against the same conditions as before.
--
-- And the function plans with enable_seqscan off. Its generic plan is made once per
-- connection (V25), which in a fresh deployment or the bench is while the outbox is a
-- few pages: the rows found again by id were then read by a sequential scan of the
-- whole outbox (the cheapest plan for a few pages), and that plan stayed while the
-- outbox grew, until an ANALYZE (autovacuum's, a minute or more later) replaced it: the
-- claim's UPDATE filtered 3,800 rows to update 115 (2.7 of its 3.2 ms). Every table
-- the statement reads has an index for its lookup (the due index, the primary keys,
-- the secrets' endpoint index), so with sequential scans priced out the plan is made of
-- index probes whatever the outbox's size when it was made.
--
-- Two smaller savings, counted with callgrind (benches/callgrind/claim_settle.sh, one
-- endpoint, DELIVER=1): the claim draws one claim token for all its rows (an init
-- plan, evaluated once), not one per row (the settle's fence is the pair of id and
-- token, so a token need only differ from other claims' tokens; gen_random_uuid() cost
-- about 6,000 instructions a row),
-- and the endpoints that exist are read once, in `targets`, which the orphans and the
-- claimed rows now test against, instead of one probe of the endpoints' key per row in
-- each. The rest of the statement is unchanged (sql/webhook_claim.sql says why).
-- Checked by sql_statements::plans::the_deliverers_claim_and_settle_probe_each_row_once.

CREATE OR REPLACE FUNCTION tasklane.claim_webhooks(p_limit bigint, p_default_rows bigint, p_claim_seconds double precision, p_endpoints uuid[], p_rows bigint[]) RETURNS TABLE(id uuid, endpoint_id uuid, task_id uuid, event text, created_at timestamp with time zone, attempts integer, claim_token uuid, url text, disabled boolean, secrets text[])
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
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

-- The deliverer's settle (sql/webhook_settle_many.sql) is fenced by the claim token
-- alone, without a test of the status that its planner would misestimate: every
-- statement that takes a notification out of pending clears its claim token (the
-- settle, an endpoint's disabling; a redelivery makes it pending again without one),
-- and this CHECK makes that a rule of the table. Validated separately, so the check of
-- the existing rows does not block the outbox's writers.
ALTER TABLE tasklane.webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_claim_only_while_pending
    CHECK (claim_token IS NULL OR status = 'pending') NOT VALID;
ALTER TABLE tasklane.webhook_deliveries
    VALIDATE CONSTRAINT webhook_deliveries_claim_only_while_pending;
