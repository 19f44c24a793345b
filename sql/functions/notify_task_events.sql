-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.notify_task_events, add a migration that replaces it, then run
-- `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The current definition of tasklane.notify_task_events (pg_dump --schema-only, normalised).
-- The line above it names the migrations that wrote it; their comments say why.

-- function notify_task_events: migrations/V2__tokens.sql, migrations/V5__hot_paths.sql, migrations/V28__events_notify_per_statement.sql
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
