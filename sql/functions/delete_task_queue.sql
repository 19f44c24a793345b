-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.delete_task_queue, add a migration that replaces it, then run
-- `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The current definition of tasklane.delete_task_queue (pg_dump --schema-only, normalised).
-- The line above it names the migrations that wrote it; their comments say why.

-- function delete_task_queue: migrations/V14__task_queue.sql
CREATE FUNCTION tasklane.delete_task_queue() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    DELETE FROM tasklane.task_queue q USING gone g WHERE q.id = g.id;
    RETURN NULL;
END
$$;
