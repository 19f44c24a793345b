-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.release_task_at, add a migration that replaces it, then run
-- `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The current definition of tasklane.release_task_at (pg_dump --schema-only, normalised).
-- The line above it names the migrations that wrote it; their comments say why.

-- function release_task_at: migrations/V4__lifecycle.rs, sql/api/release_task.sql
CREATE FUNCTION tasklane.release_task_at(p_app text, p_scope_id text, p_effect_key text, p_usage_subject text DEFAULT NULL::text) RETURNS timestamp with time zone
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    UPDATE tasklane.tasks t
    SET released_at = coalesce(t.released_at, now())
    WHERE t.app = p_app AND t.scope_id = p_scope_id AND t.effect_key = p_effect_key
      AND (t.usage_subject = p_usage_subject OR (t.usage_subject IS NULL AND p_usage_subject IS NULL))
    RETURNING t.released_at
$$;

REVOKE ALL ON FUNCTION tasklane.release_task_at(p_app text, p_scope_id text, p_effect_key text, p_usage_subject text) FROM PUBLIC;
GRANT ALL ON FUNCTION tasklane.release_task_at(p_app text, p_scope_id text, p_effect_key text, p_usage_subject text) TO tasklane_app;
