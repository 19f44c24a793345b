-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.delete_task_events, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Trigger function of tasks_delete_events (AFTER DELETE ON tasklane.tasks, per statement):
-- deletes the deleted tasks' events, which have no foreign key (a foreign key would be
-- checked on every event insert of the hot path).
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function delete_task_events: migrations/V5__hot_paths.sql, migrations/V33__function_comments.sql, migrations/V49__held_snapshot_lookups.sql, migrations/V57__switched_functions_plan_once.sql
CREATE FUNCTION tasklane.delete_task_events() RETURNS trigger
    LANGUAGE plpgsql
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
BEGIN
    DELETE FROM tasklane.task_events e WHERE e.task_id = ANY (ARRAY(SELECT g.id FROM gone g));
    RETURN NULL;
END
$$;
