-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.delete_tasks, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- SQL API and sql/lifecycle_delete.sql: deletes the tasks of scope (p_app, p_scope_id),
-- or only those of source p_source_id, and returns how many. With p_fence it first fences
-- the scope (tasklane.scope_fences), so no later submit creates tasks in it until
-- tasklane.lift_fence. Deleting a task deletes its events, attempts, mirror row and
-- undelivered notifications and gives back its slots (triggers on tasklane.tasks).
-- Needs READ COMMITTED, so rows committed while it waited for its lock are deleted too.
-- Locks: the scope's owner lock exclusively (tasklane.owner_key: waits for submits into
-- the scope, and they wait for it), then the deleted rows.
-- SECURITY DEFINER, granted to tasklane_app.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function delete_tasks: migrations/V4__lifecycle.rs, sql/api/delete_tasks.sql, migrations/V33__function_comments.sql
CREATE FUNCTION tasklane.delete_tasks(p_app text, p_scope_id text, p_source_id text DEFAULT NULL::text, p_fence boolean DEFAULT false) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    deleted bigint;
BEGIN
    IF p_app IS NULL OR p_scope_id IS NULL THEN
        RAISE EXCEPTION 'tasklane.delete_tasks: app and scope_id are required'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'tasklane.delete_tasks needs READ COMMITTED, not %',
                current_setting('transaction_isolation')
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'Run the deletion in a READ COMMITTED transaction.';
    END IF;
    PERFORM pg_advisory_xact_lock(tasklane.owner_key(p_app, p_scope_id));
    IF coalesce(p_fence, false) THEN
        INSERT INTO tasklane.scope_fences (app, scope_id) VALUES (p_app, p_scope_id)
        ON CONFLICT DO NOTHING;
    END IF;
    DELETE FROM tasklane.tasks t
    WHERE t.app = p_app AND t.scope_id = p_scope_id
      AND (p_source_id IS NULL OR t.source_id = p_source_id);
    GET DIAGNOSTICS deleted = ROW_COUNT;
    RETURN deleted;
END
$$;

REVOKE ALL ON FUNCTION tasklane.delete_tasks(p_app text, p_scope_id text, p_source_id text, p_fence boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION tasklane.delete_tasks(p_app text, p_scope_id text, p_source_id text, p_fence boolean) TO tasklane_app;
