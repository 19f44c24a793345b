-- tasklane.lift_fence: lets submits for a scope fenced by tasklane.delete_tasks(...,
-- fence => true) in again. Returns whether a fence was lifted.
-- Parameters: app, scope_id. Locks: the fence row.
CREATE FUNCTION tasklane.lift_fence(p_app text, p_scope_id text)
RETURNS boolean
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
    WITH lifted AS (
        DELETE FROM tasklane.scope_fences f
        WHERE f.app = p_app AND f.scope_id = p_scope_id
        RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM lifted)
$fn$;
