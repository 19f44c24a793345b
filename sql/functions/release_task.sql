-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.release_task, add a migration that replaces it, then run
-- `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The current definition of tasklane.release_task (pg_dump --schema-only, normalised).
-- The line above it names the migrations that wrote it; their comments say why.

-- function release_task: migrations/V4__lifecycle.rs, sql/api/release_task.sql
CREATE FUNCTION tasklane.release_task(p_app text, p_scope_id text, p_effect_key text, p_usage_subject text DEFAULT NULL::text) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT tasklane.release_task_at(p_app, p_scope_id, p_effect_key, p_usage_subject) IS NOT NULL
$$;

REVOKE ALL ON FUNCTION tasklane.release_task(p_app text, p_scope_id text, p_effect_key text, p_usage_subject text) FROM PUBLIC;
GRANT ALL ON FUNCTION tasklane.release_task(p_app text, p_scope_id text, p_effect_key text, p_usage_subject text) TO tasklane_app;
