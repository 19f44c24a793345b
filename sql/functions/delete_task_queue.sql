-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.delete_task_queue, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Trigger function of tasks_queue_delete (AFTER DELETE ON tasklane.tasks, per statement):
-- deletes the deleted tasks' mirror rows from tasklane.task_queue.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function delete_task_queue: migrations/V14__task_queue.sql, migrations/V33__function_comments.sql, migrations/V49__held_snapshot_lookups.sql, migrations/V57__switched_functions_plan_once.sql
CREATE FUNCTION tasklane.delete_task_queue() RETURNS trigger
    LANGUAGE plpgsql
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
BEGIN
    -- By id alone: a join to the deleted rows may be planned as a walk of the whole
    -- primary key, dead entries a held snapshot keeps included.
    DELETE FROM tasklane.task_queue q WHERE q.id = ANY (ARRAY(SELECT g.id FROM gone g));
    RETURN NULL;
END
$$;
