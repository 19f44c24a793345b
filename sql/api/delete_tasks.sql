-- tasklane.delete_tasks: owner deletion (DESIGN §5). Removes the scope's tasks in every
-- state, or only those whose source_id equals p_source_id exactly (`%` and `_` are
-- ordinary characters: plain equality, no LIKE, no prefix). Events go with their tasks
-- (ON DELETE CASCADE). Returns how many tasks were deleted. With p_fence, later submits
-- for the scope are refused (410 scope_deleted) until tasklane.lift_fence.
-- Parameters: app, scope_id (both required), source_id (NULL: the whole scope), fence.
-- Locks: pg_advisory_xact_lock(tasklane.owner_key(app, scope)) EXCLUSIVELY, held until
-- the caller's transaction ends, so it serializes with admission (which takes the same
-- key shared); then the deleted rows, and the fence row.
-- Needs READ COMMITTED: each statement here takes a fresh snapshot after the lock, so
-- every task whose submit committed before the lock was granted is seen and deleted.
-- Under REPEATABLE READ or SERIALIZABLE the snapshot may predate the lock and such a
-- task would survive, so it refuses (feature_not_supported) rather than do that.
CREATE FUNCTION tasklane.delete_tasks(
    p_app text, p_scope_id text, p_source_id text DEFAULT NULL, p_fence boolean DEFAULT false)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
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
$fn$;
