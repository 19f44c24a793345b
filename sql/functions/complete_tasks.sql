-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.complete_tasks, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Compatibility shim: the batch Succeed by lease without the webhook claim, as binaries
-- that do not hand notifications to their deliverer call it. Same parameters, effect and
-- locks as the first eleven of tasklane.complete_tasks_claiming; returns (id, lease_token)
-- of each settled task. No statement in sql/ calls it.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function complete_tasks: migrations/V26__complete_tasks_generic_plan.sql, migrations/V27__hot_path_writes_its_mirror.sql, migrations/V33__function_comments.sql
CREATE FUNCTION tasklane.complete_tasks(p_id uuid[], p_lease_token uuid[], p_result jsonb[], p_usage_units bigint[], p_provider text[], p_model text[], p_route text[], p_route_name text[], p_input_tokens bigint[], p_output_tokens bigint[], p_total_tokens bigint[]) RETURNS TABLE(id uuid, lease_token uuid)
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
-- transition: Succeed by lease
--   (a task holds a lease token only while running or cancelling: V17's CHECK)
-- Settles a batch of leased tasks as succeeded in one statement (group commit of
-- attempts that finished at about the same time), each fenced on its own lease token;
-- sql/complete_many.sql says the rest (its header before V26).
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
        -- `t.id = ANY(p_id)` fetches exactly the batch by primary key, in id order (the
        -- array's order: the locks are taken in it); joined to the unnest alone, a small
        -- table is read whole. The lease token alone fences: a task holds one only while
        -- running or cancelling (CHECK tasks_lease_only_while_running, V17). A test of the
        -- state here is a filter the planner estimates from statistics, which after a
        -- backlog say almost no task runs: it then expected one row, re-ran the unnest for
        -- each task found, and the settle was quadratic in the batch (60 of a 256-task
        -- batch's 84 ms in the drain).
        WHERE t.id = ANY(p_id) AND t.id = i.id AND t.lease_token = i.lease_token
        RETURNING t.id, i.lease_token, t.event_seq, t.attempt, t.finished_at, t.app,
                  t.usage_subject, t.attempts_before, t.worker_id, t.replica_id,
                  t.attempt_started_at, coalesce(t.route, i.route) AS route, i.route_name,
                  i.provider, i.model, i.input_tokens, i.output_tokens, i.total_tokens,
                  coalesce(i.usage_units, i.total_tokens) AS units, t.scope_id
    ), dequeued AS (
        -- The settled tasks leave the queue mirror here, not in the update trigger (V27):
        -- each by its primary key, and the setting tells the trigger it is done.
        DELETE FROM tasklane.task_queue q
        USING done d
        WHERE q.id = d.id
        RETURNING set_config('tasklane.queue_written', 'on', true)
    ), notified AS (
        -- One notification per subscribed, enabled endpoint of the task's app, as the
        -- trigger writes them for every other path to a terminal state; the deliverers
        -- LISTEN (PostgreSQL sends one NOTIFY per transaction for the repeats).
        INSERT INTO tasklane.webhook_deliveries
            (endpoint_id, app, scope_id, task_id, event, created_at)
        SELECT e.id, d.app, d.scope_id, d.id, 'task.succeeded', d.finished_at
        FROM done d
        JOIN tasklane.webhook_endpoints e
          ON e.app = d.app AND NOT e.disabled AND 'task.succeeded' = ANY (e.events)
        RETURNING pg_notify('tasklane_webhooks', '')
    ), event AS (
        INSERT INTO tasklane.task_events (task_id, seq, type, data, at)
        SELECT id, event_seq, 'task.succeeded', jsonb_build_object('attempt', attempt), finished_at
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
        ON CONFLICT (task_id, attempt) DO NOTHING
    ), charge AS (
        -- One row per payer (an upsert may not touch a row twice in one statement), on a
        -- random stripe of eight so concurrent batches rarely meet on one row, taken in
        -- payer order so two batches never wait on each other's stripes in a cycle.
        INSERT INTO tasklane.budget_usage AS u (app, usage_subject, day, stripe, units)
        SELECT app, coalesce(usage_subject, ''), (now() AT TIME ZONE 'UTC')::date,
               floor(random() * 8)::smallint, sum(units)::int8
        FROM done
        WHERE units > 0
        GROUP BY app, coalesce(usage_subject, '')
        ORDER BY app, coalesce(usage_subject, '')
        ON CONFLICT (app, usage_subject, day, stripe) DO UPDATE SET units = u.units + excluded.units
    )
    SELECT id, lease_token FROM done;
END
$$;
