-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.insert_task_queue, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Trigger function of tasks_queue_insert (AFTER INSERT ON tasklane.tasks, per statement):
-- writes the mirror rows in tasklane.task_queue of the inserted tasks that are not
-- finished, each claimable one with its turn (tasklane.take_turns), holding their floors
-- (tasklane.hold_floors). The mirror is the narrow table the claim scans, so the queue's
-- indexes stay small whatever tasks holds.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function insert_task_queue: migrations/V14__task_queue.sql, migrations/V33__function_comments.sql, migrations/V38__fair_turns.sql, migrations/V40__claims_start_at_the_floor.sql
CREATE FUNCTION tasklane.insert_task_queue() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    ids uuid[]; types text[]; priorities smallint[]; apps text[]; subjects text[];
BEGIN
    SELECT array_agg(n.id), array_agg(n.task_type), array_agg(n.priority), array_agg(n.app),
           array_agg(coalesce(n.usage_subject, ''))
    INTO ids, types, priorities, apps, subjects
    FROM fresh n
    WHERE n.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback');
    IF ids IS NOT NULL THEN
        PERFORM tasklane.hold_floors(types, priorities);
    END IF;
    INSERT INTO tasklane.task_queue
        (id, state, priority, run_at, deadline_at, lease_expires_at, task_type, app,
         scope_id, privacy, resource, subject, turn)
    SELECT n.id, n.state, n.priority, n.run_at, n.deadline_at, n.lease_expires_at,
           n.task_type, n.app, n.scope_id, n.privacy, n.resource,
           coalesce(n.usage_subject, ''), t.turn
    FROM fresh n
    LEFT JOIN tasklane.take_turns(ids, types, priorities, apps, subjects) t ON t.id = n.id
    WHERE n.state NOT IN ('succeeded', 'failed', 'cancelled');
    RETURN NULL;
END
$$;
