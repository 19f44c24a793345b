-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.hold_floors, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Holds the floors (tasklane.turn_floors) of the given task types and priorities until the
-- transaction ends, creating the missing ones at -Infinity: called by the mirror's triggers
-- before they write claimable rows, so no floor is raised past a task whose row is not yet
-- committed. Locks: a shared transaction advisory lock per task type and priority (class
-- 1953264742); a new floor row.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function hold_floors: migrations/V40__claims_start_at_the_floor.sql, migrations/V56__floors_read_from_their_top.sql, migrations/V57__switched_functions_plan_once.sql
CREATE FUNCTION tasklane.hold_floors(p_task_type text[], p_priority smallint[]) RETURNS void
    LANGUAGE plpgsql
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
BEGIN
    -- Shared: writers never wait for each other, only for a raise in progress (a few
    -- milliseconds). The class 0x746c7466 is the floors' alone.
    PERFORM pg_advisory_xact_lock_shared(1953264742, hashtext(g.task_type || '/' || g.priority))
    FROM (SELECT DISTINCT u.task_type, u.priority
          FROM unnest(p_task_type, p_priority) AS u(task_type, priority)) g;
    INSERT INTO tasklane.turn_floors (task_type, priority)
    SELECT DISTINCT u.task_type, u.priority
    FROM unnest(p_task_type, p_priority) AS u(task_type, priority)
    WHERE (SELECT f.floor FROM tasklane.turn_floors f
           WHERE f.task_type = u.task_type AND f.priority = u.priority
           ORDER BY f.floor DESC
           LIMIT 1) IS NULL
    ON CONFLICT DO NOTHING;
END
$$;
