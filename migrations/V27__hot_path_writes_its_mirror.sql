-- V27: the hot path writes its own queue mirror rows and notifications (issue 16, the
-- drain; issue 14, the drain with an endpoint). Forward-only: never edit once landed.
--
-- Profiled with perf during tasklane's own claim and settle of 100 (pgbench, one
-- client), the mirror's update trigger (V22) took a quarter of the backend's executor
-- time: a PL/pgSQL call, a tuplestore of the changed rows, then per row a probe to
-- compare the mirror row, an INSERT ... ON CONFLICT that probes the primary key again
-- and updates, or a DELETE USING the transition table. Most of that is the mirror's own
-- row work, which stays; the rest is what this saves. The claim knows every one of its
-- rows goes running with its new lease, the batch settle that every one of its rows
-- ends succeeded: each writes the mirror itself in a CTE (one primary-key probe and one
-- write a task), and the settle its notifications too. Counted with callgrind
-- (benches/callgrind/claim_settle.sh), a claim of 100 and its settle went from 416,000
-- to 402,000 PostgreSQL instructions a task (-3.4%).
--
-- * The trigger stays for every other statement that moves a task (cancel, retry,
--   rescue, deadline sweep, a hand-written UPDATE): the mirror is still kept by the
--   database whatever wrote. A statement that wrote its own says so with the
--   transaction-local setting tasklane.queue_written, set by the RETURNING of its mirror
--   write (so only when it wrote a row, and so updated a task, whose statement trigger
--   then fires); the trigger consumes it and returns. A claim or settle that moved no
--   task sets nothing and the trigger runs as before on an empty transition table.
-- * Locks stay in one order: the task rows first (the claim's FOR UPDATE, the settle's
--   UPDATE), their mirror rows after.
-- * An older binary beside this one (a rolling upgrade) sends the old statements: its
--   claims and settles set nothing, and the trigger keeps their mirror rows as before.

CREATE OR REPLACE FUNCTION tasklane.sync_task_queue() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    written bigint;
BEGIN
    -- The statement wrote its own tasks' mirror rows and notifications (below): the
    -- setting is consumed here, so the next statement of the transaction is synced.
    IF current_setting('tasklane.queue_written', true) = 'on' THEN
        PERFORM set_config('tasklane.queue_written', '', true);
        RETURN NULL;
    END IF;
    IF EXISTS (SELECT 1 FROM tasklane.webhook_endpoints WHERE NOT disabled) THEN
        WITH ended AS (
            DELETE FROM tasklane.task_queue q USING fresh n
            WHERE q.id = n.id AND n.state IN ('succeeded', 'failed', 'cancelled')
            RETURNING n.id, n.app, n.scope_id, n.state, n.finished_at
        )
        INSERT INTO tasklane.webhook_deliveries
            (endpoint_id, app, scope_id, task_id, event, created_at)
        SELECT e.id, d.app, d.scope_id, d.id, 'task.' || d.state, coalesce(d.finished_at, now())
        FROM ended d
        JOIN tasklane.webhook_endpoints e
          ON e.app = d.app AND NOT e.disabled AND ('task.' || d.state) = ANY (e.events);
        GET DIAGNOSTICS written = ROW_COUNT;
        -- The deliverers of every replica LISTEN: one NOTIFY per statement that wrote.
        IF written > 0 THEN
            PERFORM pg_notify('tasklane_webhooks', '');
        END IF;
    ELSE
        DELETE FROM tasklane.task_queue q USING fresh n
        WHERE q.id = n.id AND n.state IN ('succeeded', 'failed', 'cancelled');
    END IF;
    INSERT INTO tasklane.task_queue AS q
        (id, state, priority, run_at, deadline_at, lease_expires_at, task_type, app,
         scope_id, privacy, resource)
    SELECT n.id, n.state, n.priority, n.run_at, n.deadline_at, n.lease_expires_at,
           n.task_type, n.app, n.scope_id, n.privacy, n.resource
    FROM fresh n
    WHERE n.state NOT IN ('succeeded', 'failed', 'cancelled')
      AND coalesce((SELECT (o.state, o.priority, o.run_at, o.deadline_at, o.lease_expires_at)
                           IS DISTINCT FROM
                           (n.state, n.priority, n.run_at, n.deadline_at, n.lease_expires_at)
                    FROM tasklane.task_queue o WHERE o.id = n.id), true)
    ON CONFLICT (id) DO UPDATE
    SET state = excluded.state, priority = excluded.priority, run_at = excluded.run_at,
        deadline_at = excluded.deadline_at, lease_expires_at = excluded.lease_expires_at;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION tasklane.complete_tasks(
    p_id uuid[], p_lease_token uuid[], p_result jsonb[], p_usage_units int8[],
    p_provider text[], p_model text[], p_route text[], p_route_name text[],
    p_input_tokens int8[], p_output_tokens int8[], p_total_tokens int8[])
RETURNS TABLE (id uuid, lease_token uuid)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
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
