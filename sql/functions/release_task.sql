-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.release_task, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- SQL API: marks the task with identity (p_app, p_scope_id, p_effect_key,
-- p_usage_subject) released: the application has taken its result, so retention may prune
-- it once finished. Returns whether the task exists. Idempotent (tasklane.release_task_at
-- keeps the first release time). Locks: the task's row. SECURITY DEFINER, granted to
-- tasklane_app.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function release_task: migrations/V4__lifecycle.rs, sql/api/release_task.sql, migrations/V33__function_comments.sql
CREATE FUNCTION tasklane.release_task(p_app text, p_scope_id text, p_effect_key text, p_usage_subject text DEFAULT NULL::text) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT tasklane.release_task_at(p_app, p_scope_id, p_effect_key, p_usage_subject) IS NOT NULL
$$;

REVOKE ALL ON FUNCTION tasklane.release_task(p_app text, p_scope_id text, p_effect_key text, p_usage_subject text) FROM PUBLIC;
GRANT ALL ON FUNCTION tasklane.release_task(p_app text, p_scope_id text, p_effect_key text, p_usage_subject text) TO tasklane_app;
