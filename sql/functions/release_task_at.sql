-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.release_task_at, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- SQL API and sql/lifecycle_release.sql: releases the task with identity (p_app,
-- p_scope_id, p_effect_key, p_usage_subject; a NULL subject matches only NULL) as
-- tasklane.release_task does and returns when it was first released, NULL when no task
-- has the identity. The update skips the queue mirror's sync (released_at is not
-- mirrored). Locks: the task's row. SECURITY DEFINER, granted to tasklane_app.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function release_task_at: migrations/V4__lifecycle.rs, sql/api/release_task.sql, migrations/V33__function_comments.sql, migrations/V46__release_skips_the_mirror.sql
CREATE FUNCTION tasklane.release_task_at(p_app text, p_scope_id text, p_effect_key text, p_usage_subject text DEFAULT NULL::text) RETURNS timestamp with time zone
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_released timestamptz;
BEGIN
    -- Consumed by the trigger of this statement (tasklane.sync_task_queue).
    PERFORM set_config('tasklane.queue_written', 'on', true);
    UPDATE tasklane.tasks t
    SET released_at = coalesce(t.released_at, now())
    WHERE t.app = p_app AND t.scope_id = p_scope_id AND t.effect_key = p_effect_key
      AND (t.usage_subject = p_usage_subject OR (t.usage_subject IS NULL AND p_usage_subject IS NULL))
    RETURNING t.released_at INTO v_released;
    RETURN v_released;
END
$$;

REVOKE ALL ON FUNCTION tasklane.release_task_at(p_app text, p_scope_id text, p_effect_key text, p_usage_subject text) FROM PUBLIC;
GRANT ALL ON FUNCTION tasklane.release_task_at(p_app text, p_scope_id text, p_effect_key text, p_usage_subject text) TO tasklane_app;
