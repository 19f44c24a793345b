-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.delete_task_attempts, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Trigger function of tasks_delete_attempts (AFTER DELETE ON tasklane.tasks, per
-- statement): deletes the deleted tasks' attempt rows (tasklane.task_attempts, no foreign
-- key).
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function delete_task_attempts: migrations/V9__task_attempts.sql, migrations/V33__function_comments.sql, migrations/V49__held_snapshot_lookups.sql, migrations/V57__switched_functions_plan_once.sql
CREATE FUNCTION tasklane.delete_task_attempts() RETURNS trigger
    LANGUAGE plpgsql
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
BEGIN
    DELETE FROM tasklane.task_attempts a WHERE a.task_id = ANY (ARRAY(SELECT g.id FROM gone g));
    RETURN NULL;
END
$$;
