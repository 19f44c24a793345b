-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.run_task, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- SQL API, kept for callers of the previous release: tasklane.queue_task with the
-- parameter names without prefix (app, task_type, scope_id, effect_key, input, source_id,
-- usage_subject, priority, deadline_seconds, max_attempts, on_restart, privacy), by name
-- or by position; same answer, refusals and wake-up. Dropped by a later release, in a
-- migration of its own, once no supported client calls it.
-- Locks: those of tasklane.queue_task, held until the application's transaction ends.
-- SECURITY DEFINER, granted to tasklane_app.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function run_task: migrations/V12__sql_run_task.sql, migrations/V33__function_comments.sql, migrations/V41__queue_task_p_names.sql
CREATE FUNCTION tasklane.run_task(app text, task_type text, scope_id text, effect_key text, input jsonb, source_id text DEFAULT NULL::text, usage_subject text DEFAULT NULL::text, priority integer DEFAULT NULL::integer, deadline_seconds bigint DEFAULT NULL::bigint, max_attempts integer DEFAULT NULL::integer, on_restart text DEFAULT NULL::text, privacy text DEFAULT NULL::text) RETURNS TABLE(task_id uuid, outcome text)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT q.task_id, q.outcome
    FROM tasklane.queue_task(run_task.app, run_task.task_type, run_task.scope_id,
                             run_task.effect_key, run_task.input, run_task.source_id,
                             run_task.usage_subject, run_task.priority,
                             run_task.deadline_seconds, run_task.max_attempts,
                             run_task.on_restart, run_task.privacy) q
$$;

REVOKE ALL ON FUNCTION tasklane.run_task(app text, task_type text, scope_id text, effect_key text, input jsonb, source_id text, usage_subject text, priority integer, deadline_seconds bigint, max_attempts integer, on_restart text, privacy text) FROM PUBLIC;
GRANT ALL ON FUNCTION tasklane.run_task(app text, task_type text, scope_id text, effect_key text, input jsonb, source_id text, usage_subject text, priority integer, deadline_seconds bigint, max_attempts integer, on_restart text, privacy text) TO tasklane_app;
