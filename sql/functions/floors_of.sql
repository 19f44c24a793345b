-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.floors_of, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The claims' floors of task type p_task_type: each priority that has one, highest
-- first, with its floor. One probe a priority from the top of turn_floors_top, so none
-- visits the versions of a floor a held snapshot keeps. Called by the claim statement
-- (sql/claim.sql) for each task type it serves.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function floors_of: migrations/V56__floors_read_from_their_top.sql, migrations/V57__switched_functions_plan_once.sql
CREATE FUNCTION tasklane.floors_of(p_task_type text) RETURNS TABLE(priority smallint, floor double precision)
    LANGUAGE plpgsql STABLE ROWS 1
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
#variable_conflict use_column
DECLARE
    next_priority smallint;
    next_floor double precision;
BEGIN
    -- Highest priority first, each one's current row from the top of turn_floors_top.
    SELECT f.priority, f.floor INTO next_priority, next_floor
    FROM tasklane.turn_floors f
    WHERE f.task_type = p_task_type
    ORDER BY f.priority DESC, f.floor DESC
    LIMIT 1;
    WHILE FOUND LOOP
        priority := next_priority;
        floor := next_floor;
        RETURN NEXT;
        SELECT f.priority, f.floor INTO next_priority, next_floor
        FROM tasklane.turn_floors f
        WHERE f.task_type = p_task_type AND f.priority < next_priority
        ORDER BY f.priority DESC, f.floor DESC
        LIMIT 1;
    END LOOP;
END
$$;
