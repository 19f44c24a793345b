-- V46: a release writes only released_at, which the queue's mirror (tasklane.task_queue)
-- does not keep, so the update trigger that syncs the mirror has nothing to do for it;
-- yet it ran its whole body for every release (the transition table's joins, the floors'
-- lookups), and the function's UPDATE was planned at every call (a SQL function's plan
-- lives for one call). The lifecycle soak measured the release as a quarter of
-- PostgreSQL's statement time at 250 tasks/s. Now PL/pgSQL (its plan kept for the
-- session) that tells the trigger the statement needs no sync, as the claim and the
-- group commit do. Same signature, result and locks. Forward-only: never edit once
-- landed.
CREATE OR REPLACE FUNCTION tasklane.release_task_at(p_app text, p_scope_id text, p_effect_key text, p_usage_subject text DEFAULT NULL)
RETURNS timestamptz
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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

COMMENT ON FUNCTION tasklane.release_task_at(text, text, text, text) IS
$$SQL API and sql/lifecycle_release.sql: releases the task with identity (p_app,
p_scope_id, p_effect_key, p_usage_subject; a NULL subject matches only NULL) as
tasklane.release_task does and returns when it was first released, NULL when no task
has the identity. The update skips the queue mirror's sync (released_at is not
mirrored). Locks: the task's row. SECURITY DEFINER, granted to tasklane_app.$$;
