-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.delete_task_events, add a migration that replaces it, then run
-- `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The current definition of tasklane.delete_task_events (pg_dump --schema-only, normalised).
-- The line above it names the migrations that wrote it; their comments say why.

-- function delete_task_events: migrations/V5__hot_paths.sql
CREATE FUNCTION tasklane.delete_task_events() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    DELETE FROM tasklane.task_events e USING gone g WHERE e.task_id = g.id;
    RETURN NULL;
END
$$;
