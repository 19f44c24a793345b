-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.sync_task_queue, add a migration that replaces it, then run
-- `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The current definition of tasklane.sync_task_queue (pg_dump --schema-only, normalised).
-- The line above it names the migrations that wrote it; their comments say why.

-- function sync_task_queue: migrations/V14__task_queue.sql
CREATE FUNCTION tasklane.sync_task_queue() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    DELETE FROM tasklane.task_queue q USING fresh n
    WHERE q.id = n.id AND n.state IN ('succeeded', 'failed', 'cancelled');
    INSERT INTO tasklane.task_queue AS q
        (id, state, priority, run_at, deadline_at, lease_expires_at, task_type, app,
         scope_id, privacy, resource)
    SELECT n.id, n.state, n.priority, n.run_at, n.deadline_at, n.lease_expires_at,
           n.task_type, n.app, n.scope_id, n.privacy, n.resource
    FROM fresh n
    LEFT JOIN tasklane.task_queue o ON o.id = n.id
    WHERE n.state NOT IN ('succeeded', 'failed', 'cancelled')
      AND (o.id IS NULL
           OR (o.state, o.priority, o.run_at, o.deadline_at, o.lease_expires_at)
              IS DISTINCT FROM (n.state, n.priority, n.run_at, n.deadline_at, n.lease_expires_at))
    ON CONFLICT (id) DO UPDATE
    SET state = excluded.state, priority = excluded.priority, run_at = excluded.run_at,
        deadline_at = excluded.deadline_at, lease_expires_at = excluded.lease_expires_at;
    RETURN NULL;
END
$$;
