-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.notify_task_event, add a migration that replaces it, then run
-- `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The current definition of tasklane.notify_task_event (pg_dump --schema-only, normalised).
-- The line above it names the migrations that wrote it; their comments say why.

-- function notify_task_event: migrations/V5__hot_paths.sql
CREATE FUNCTION tasklane.notify_task_event() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM pg_notify('tasklane_events', NEW.task_id::text);
    RETURN NULL;
END
$$;
