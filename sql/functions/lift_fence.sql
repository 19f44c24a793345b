-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.lift_fence, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- SQL API and sql/lifecycle_lift_fence.sql: lifts the fence tasklane.delete_tasks set on
-- scope (p_app, p_scope_id), so submits into it are accepted again; returns whether there
-- was one. Locks: the fence row. SECURITY DEFINER, granted to tasklane_app.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function lift_fence: migrations/V4__lifecycle.rs, sql/api/lift_fence.sql, migrations/V33__function_comments.sql
CREATE FUNCTION tasklane.lift_fence(p_app text, p_scope_id text) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    WITH lifted AS (
        DELETE FROM tasklane.scope_fences f
        WHERE f.app = p_app AND f.scope_id = p_scope_id
        RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM lifted)
$$;

REVOKE ALL ON FUNCTION tasklane.lift_fence(p_app text, p_scope_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION tasklane.lift_fence(p_app text, p_scope_id text) TO tasklane_app;
