-- tasklane.release_task_at / tasklane.release_task: the application's statement that it
-- has durably settled (or discarded) a task's result (DESIGN §5). Starts the retention
-- clock; never cancels: an in-flight task keeps running and settles normally.
-- Callable in the application's own transaction: a rollback leaves nothing released.
-- Parameters: app, scope_id, effect_key, usage_subject (NULL is one value, as in the
-- tasks_identity constraint).
-- release_task_at returns the task's released_at (the first one on repeats: coalesce
-- keeps it, also when two releases race, because the second re-reads the row it waited
-- for), or NULL when no task has this identity. release_task returns whether one exists.
-- Locks: the task row (FOR NO KEY UPDATE via UPDATE) until the caller's transaction ends.
-- Admission history and budgets are not touched.
CREATE FUNCTION tasklane.release_task_at(
    p_app text, p_scope_id text, p_effect_key text, p_usage_subject text DEFAULT NULL)
RETURNS timestamptz
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
    UPDATE tasklane.tasks t
    SET released_at = coalesce(t.released_at, now())
    WHERE t.app = p_app AND t.scope_id = p_scope_id AND t.effect_key = p_effect_key
      AND (t.usage_subject = p_usage_subject OR (t.usage_subject IS NULL AND p_usage_subject IS NULL))
    RETURNING t.released_at
$fn$;

CREATE FUNCTION tasklane.release_task(
    p_app text, p_scope_id text, p_effect_key text, p_usage_subject text DEFAULT NULL)
RETURNS boolean
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
    SELECT tasklane.release_task_at(p_app, p_scope_id, p_effect_key, p_usage_subject) IS NOT NULL
$fn$;
