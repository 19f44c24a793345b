-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.delete_task_queue, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Trigger function of tasks_queue_delete (AFTER DELETE ON tasklane.tasks, per statement):
-- deletes the deleted tasks' mirror rows from tasklane.task_queue.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function delete_task_queue: migrations/V14__task_queue.sql, migrations/V33__function_comments.sql
CREATE FUNCTION tasklane.delete_task_queue() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    DELETE FROM tasklane.task_queue q USING gone g WHERE q.id = g.id;
    RETURN NULL;
END
$$;
