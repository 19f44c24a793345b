-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.notify_task_events, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Trigger function of task_events_notify (AFTER INSERT ON tasklane.task_events, per
-- statement): NOTIFY tasklane_events with the ids of the tasks that finished or wrote
-- output, up to 200 ids a message, so replicas answer waiting requests (wait=, streams)
-- without polling. One statement's events make one to a few messages whatever the batch's
-- size.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function notify_task_events: migrations/V2__tokens.sql, migrations/V5__hot_paths.sql, migrations/V28__events_notify_per_statement.sql, migrations/V33__function_comments.sql
CREATE FUNCTION tasklane.notify_task_events() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    ids text[];
BEGIN
    SELECT array_agg(task_id::text) INTO ids
    FROM added
    WHERE type IN ('task.succeeded', 'task.failed', 'task.cancelled', 'task.output');
    FOR part IN 0 .. coalesce(cardinality(ids), 0) - 1 BY 200 LOOP
        PERFORM pg_notify('tasklane_events', array_to_string(ids[part + 1:part + 200], ','));
    END LOOP;
    RETURN NULL;
END
$$;
