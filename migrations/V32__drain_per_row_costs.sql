-- V32: fewer instructions a drained task (issue 16, the drain against raw claim-50).
-- Forward-only: never edit once landed.
--
-- Counted with benches/callgrind/claim_settle.sh (a claim of 100 and its batch settle),
-- four per-row costs that buy nothing for the common task:
--
-- * The event data of a first attempt: jsonb_build_object costs about 10,000
--   instructions for the claim's {"attempt", "route"} and 5,600 for the settle's
--   {"attempt"} (a jsonb is built, sorted and flattened per row), a constant of the
--   same value none. Almost every task succeeds at its first attempt, so the settle
--   writes the constant then and builds the object otherwise; the claim does the same
--   (sql/claim.sql, no migration: it is a statement). The stored value is equal, key
--   order included (jsonb orders its keys itself).
-- * The attempt row's ON CONFLICT DO NOTHING: a speculative insertion (a probe of the
--   primary key before the insert, a speculative token, a second WAL record to confirm
--   it), about 9,600 instructions a row. An attempt row is written only when its
--   attempt ends, by the one statement that clears the lease token it is fenced on
--   (a task holds a token only while running or cancelling, V17; an owner's retry
--   keeps the numbering going through attempts_before), so the batch settle never
--   meets one. Were it ever to, the unique violation fails the batch and the completer
--   settles its tasks one by one (src/worker/completer.rs) through sql/complete.sql,
--   which keeps DO NOTHING: a row is never lost, a batch at most costs its retry.
-- * The lease token (sql/claim.sql): gen_random_uuid() reads OpenSSL's generator for
--   each row, about 8,600 instructions; the claim now draws one token per statement
--   (DESIGN's "a fresh random UUID per claim": the claim is the worker's call, and
--   every task it takes goes to that worker). The fence is the pair (id, lease_token),
--   as every statement that checks it reads it, so tasks sharing a claim's token fence
--   each other no less than before; a task claimed again gets a new one.
--
-- * The mirror trigger's setting (V27), set in the RETURNING of the mirror writes, so
--   once for each row: 2,600 instructions a row in the claim and again in the settle.
--   It is set once a statement now, by a CTE that the answer joins (a CTE no one reads
--   is never run), and still only when a mirror row was written.
--
-- Together 385,400 -> 346,000 instructions a task (-10.2%): the lease token 8,600, the
-- claim's event data 9,700, the settle's 5,700, the attempt row's insert 9,600, the
-- setting 3,400.

CREATE OR REPLACE FUNCTION tasklane.complete_tasks_claiming(
    p_id uuid[], p_lease_token uuid[], p_result jsonb[], p_usage_units bigint[],
    p_provider text[], p_model text[], p_route text[], p_route_name text[],
    p_input_tokens bigint[], p_output_tokens bigint[], p_total_tokens bigint[],
    p_claim_token uuid, p_claim_seconds double precision, p_busy uuid[])
RETURNS TABLE(id uuid, lease_token uuid, delivery_id uuid, endpoint_id uuid,
              created_at timestamp with time zone)
LANGUAGE plpgsql
SET plan_cache_mode TO 'force_generic_plan'
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
-- transition: Succeed by lease
--   (a task holds a lease token only while running or cancelling: V17's CHECK)
-- Settles a batch of leased tasks as succeeded in one statement, each fenced on its own
-- lease token, as tasklane.complete_tasks (V26, V27 say why each part has its shape),
-- and claims the notifications it writes for the caller's deliverer (V31). A first
-- attempt's event data is a constant, its attempt row a plain insert and the mirror
-- trigger's setting set once (V32).
    WITH input AS (
        SELECT *
        FROM unnest(p_id, p_lease_token, p_result, p_usage_units, p_provider, p_model,
                    p_route, p_route_name, p_input_tokens, p_output_tokens, p_total_tokens)
            AS i(id, lease_token, result, usage_units, provider, model, route, route_name,
                 input_tokens, output_tokens, total_tokens)
    ), done AS (
        UPDATE tasklane.tasks t
        SET state = 'succeeded', result = i.result, provider = i.provider, model = i.model,
            finished_at = now(), lease_token = NULL, lease_expires_at = NULL,
            error_code = NULL, error_message = NULL, snapshot = NULL,
            event_seq = t.event_seq + 1
        FROM input i
        WHERE t.id = ANY(p_id) AND t.id = i.id AND t.lease_token = i.lease_token
        RETURNING t.id, i.lease_token, t.event_seq, t.attempt, t.finished_at, t.app,
                  t.usage_subject, t.attempts_before, t.worker_id, t.replica_id,
                  t.attempt_started_at, coalesce(t.route, i.route) AS route, i.route_name,
                  i.provider, i.model, i.input_tokens, i.output_tokens, i.total_tokens,
                  coalesce(i.usage_units, i.total_tokens) AS units, t.scope_id
    ), dequeued AS (
        DELETE FROM tasklane.task_queue q
        USING done d
        WHERE q.id = d.id
        RETURNING q.id
    ), written AS (
        -- The mirror trigger's setting, once a statement (the answer joins it).
        SELECT set_config('tasklane.queue_written', 'on', true) AS written
        WHERE EXISTS (SELECT 1 FROM dequeued)
    ), notified AS (
        -- One notification per subscribed, enabled endpoint of the task's app, claimed
        -- for the caller unless it passed no token or the endpoint is busy there.
        INSERT INTO tasklane.webhook_deliveries
            (endpoint_id, app, scope_id, task_id, event, created_at, attempts, claim_token,
             claimed_until)
        SELECT e.id, d.app, d.scope_id, d.id, 'task.succeeded', d.finished_at,
               c.claimed::int,
               CASE WHEN c.claimed THEN p_claim_token END,
               CASE WHEN c.claimed THEN now() + p_claim_seconds * interval '1 second' END
        FROM done d
        JOIN tasklane.webhook_endpoints e
          ON e.app = d.app AND NOT e.disabled AND 'task.succeeded' = ANY (e.events)
        CROSS JOIN LATERAL (
            SELECT coalesce(p_claim_token IS NOT NULL AND e.id <> ALL (p_busy), false)
                AS claimed
        ) c
        RETURNING webhook_deliveries.id, webhook_deliveries.task_id,
                  webhook_deliveries.endpoint_id, webhook_deliveries.created_at,
                  webhook_deliveries.claim_token,
                  CASE WHEN webhook_deliveries.claim_token IS NULL
                       THEN pg_notify('tasklane_webhooks', '') END AS woke
    ), event AS (
        INSERT INTO tasklane.task_events (task_id, seq, type, data, at)
        SELECT id, event_seq, 'task.succeeded',
               CASE WHEN attempt = 1 THEN '{"attempt": 1}'::jsonb
                    ELSE jsonb_build_object('attempt', attempt) END,
               finished_at
        FROM done
    ), attempt AS (
        INSERT INTO tasklane.task_attempts
            (task_id, attempt, route, route_name, provider, model, worker_id, replica_id,
             started_at, finished_at, outcome, input_tokens, output_tokens, total_tokens,
             usage_units)
        SELECT id, attempts_before + attempt, route, route_name, provider, model, worker_id,
               replica_id, coalesce(attempt_started_at, finished_at), finished_at, 'succeeded',
               input_tokens, output_tokens, total_tokens, units
        FROM done
    ), charge AS (
        INSERT INTO tasklane.budget_usage AS u (app, usage_subject, day, stripe, units)
        SELECT app, coalesce(usage_subject, ''), (now() AT TIME ZONE 'UTC')::date,
               floor(random() * 8)::smallint, sum(units)::int8
        FROM done
        WHERE units > 0
        GROUP BY app, coalesce(usage_subject, '')
        ORDER BY app, coalesce(usage_subject, '')
        ON CONFLICT (app, usage_subject, day, stripe) DO UPDATE SET units = u.units + excluded.units
    )
    SELECT d.id, d.lease_token, NULL::uuid, NULL::uuid, NULL::timestamptz
    FROM done d LEFT JOIN written ON true
    UNION ALL
    SELECT n.task_id, NULL::uuid, n.id, n.endpoint_id, n.created_at
    FROM notified n
    WHERE n.claim_token IS NOT NULL;
END
$$;
