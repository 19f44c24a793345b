-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.complete_tasks_claiming, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- tasklane.complete_tasks_claiming(p_id uuid[], p_lease_token uuid[], p_result jsonb[], p_usage_units bigint[], p_provider text[], p_model text[], p_route text[], p_route_name text[], p_input_tokens bigint[], p_output_tokens bigint[], p_total_tokens bigint[], p_claim_token uuid, p_claim_seconds double precision, p_busy uuid[]):
-- Compatibility shim: the batch Succeed by lease as binaries that do not record the model
-- the provider says answered call it (their attempt rows leave it and the system
-- fingerprint NULL). Same parameters, effect and locks as the 16-argument
-- overload less those two arrays. No statement in sql/ calls it.
--
-- tasklane.complete_tasks_claiming(p_id uuid[], p_lease_token uuid[], p_result jsonb[], p_usage_units bigint[], p_provider text[], p_model text[], p_route text[], p_route_name text[], p_input_tokens bigint[], p_output_tokens bigint[], p_total_tokens bigint[], p_response_model text[], p_system_fingerprint text[], p_claim_token uuid, p_claim_seconds double precision, p_busy uuid[]):
-- The transition Succeed by lease for a batch (group commit of attempts that finished at
-- about the same time), called by sql/complete_many.sql for in-process workers. Each task
-- is fenced on its own lease token and gets its task.succeeded event, its attempt row and
-- the budget charge of the usage it reported; its mirror row in tasklane.task_queue is
-- deleted here (the statement sets tasklane.queue_written, so the mirror trigger skips
-- it). The attempt's deadline is not fenced: the worker's own timer ends an attempt at its
-- deadline.
-- Parameters: parallel arrays with one element per task, p_id, p_lease_token, p_result
-- and the attempt's facts (units, provider, model, route, route name, input, output and
-- total tokens, the model the provider says answered and its system fingerprint; NULL
-- elements allowed); p_claim_token and p_claim_seconds: the webhook notifications written
-- are claimed for this replica's deliverer with this token for this long (NULL token:
-- claim none), except those of the endpoints in p_busy.
-- Returns (id, lease_token) of each settled task with delivery_id NULL (a pair missing
-- from the answer lost its lease or is gone), and (task id, delivery_id, endpoint_id,
-- created_at) of each claimed notification with lease_token NULL. Unclaimed
-- notifications wake the deliverers (NOTIFY tasklane_webhooks).
-- The statement lives in a function so it is planned once per connection
-- (plan_cache_mode = force_generic_plan).
-- Locks: the settled task rows in array order (callers sort by id, so two batches never
-- wait on each other in opposite orders); the budget_usage stripes charged.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function complete_tasks_claiming: migrations/V31__webhook_handoff.sql, migrations/V32__drain_per_row_costs.sql, migrations/V33__function_comments.sql, migrations/V36__response_model.sql, migrations/V47__held_snapshot_plans.sql
CREATE FUNCTION tasklane.complete_tasks_claiming(p_id uuid[], p_lease_token uuid[], p_result jsonb[], p_usage_units bigint[], p_provider text[], p_model text[], p_route text[], p_route_name text[], p_input_tokens bigint[], p_output_tokens bigint[], p_total_tokens bigint[], p_claim_token uuid, p_claim_seconds double precision, p_busy uuid[]) RETURNS TABLE(id uuid, lease_token uuid, delivery_id uuid, endpoint_id uuid, created_at timestamp with time zone)
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
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
        -- By `q.id = ANY (ids)` alone, not joined to `done`: a join may be planned as a
        -- hash of the mirror's whole primary key, whose dead entries a held snapshot
        -- keeps.
        DELETE FROM tasklane.task_queue q
        WHERE q.id = ANY (ARRAY(SELECT d.id FROM done d))
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

-- function complete_tasks_claiming: migrations/V31__webhook_handoff.sql, migrations/V32__drain_per_row_costs.sql, migrations/V33__function_comments.sql, migrations/V36__response_model.sql, migrations/V47__held_snapshot_plans.sql
CREATE FUNCTION tasklane.complete_tasks_claiming(p_id uuid[], p_lease_token uuid[], p_result jsonb[], p_usage_units bigint[], p_provider text[], p_model text[], p_route text[], p_route_name text[], p_input_tokens bigint[], p_output_tokens bigint[], p_total_tokens bigint[], p_response_model text[], p_system_fingerprint text[], p_claim_token uuid, p_claim_seconds double precision, p_busy uuid[]) RETURNS TABLE(id uuid, lease_token uuid, delivery_id uuid, endpoint_id uuid, created_at timestamp with time zone)
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
-- transition: Succeed by lease
--   (a task holds a lease token only while running or cancelling: V17's CHECK)
-- Settles a batch of leased tasks as succeeded in one statement, each fenced on its own
-- lease token, as the 14-argument overload does (V26, V27, V31, V32 say why each part
-- has its shape), and records the model the provider says answered and its system
-- fingerprint with each attempt row (V36).
    WITH input AS (
        SELECT *
        FROM unnest(p_id, p_lease_token, p_result, p_usage_units, p_provider, p_model,
                    p_route, p_route_name, p_input_tokens, p_output_tokens, p_total_tokens,
                    p_response_model, p_system_fingerprint)
            AS i(id, lease_token, result, usage_units, provider, model, route, route_name,
                 input_tokens, output_tokens, total_tokens, response_model,
                 system_fingerprint)
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
                  coalesce(i.usage_units, i.total_tokens) AS units, t.scope_id,
                  i.response_model, i.system_fingerprint
    ), dequeued AS (
        -- By `q.id = ANY (ids)` alone, not joined to `done`: a join may be planned as a
        -- hash of the mirror's whole primary key, whose dead entries a held snapshot
        -- keeps.
        DELETE FROM tasklane.task_queue q
        WHERE q.id = ANY (ARRAY(SELECT d.id FROM done d))
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
             usage_units, response_model, system_fingerprint)
        SELECT id, attempts_before + attempt, route, route_name, provider, model, worker_id,
               replica_id, coalesce(attempt_started_at, finished_at), finished_at, 'succeeded',
               input_tokens, output_tokens, total_tokens, units, response_model,
               system_fingerprint
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
