-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.raise_points, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Raises where the claims have got (tasklane.turn_points; parallel arrays: task type,
-- priority, the highest turn a claim took) to the given turns, creating the points of
-- the first claims; returns how many it wrote. Called by the claim statement
-- (sql/claim.sql, the `raised` step). Reads each point from the top of turn_points_top
-- and updates it by its address, so neither visits the versions a held snapshot keeps.
-- A point another claim holds is skipped, never waited for; a point that another claim
-- is creating (a transaction advisory lock of class 1953264752, tried) is left to it.
-- Locks: the raised points' rows, the advisory locks of the points it creates.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function raise_points: migrations/V54__claims_point_read_from_its_top.sql, migrations/V57__switched_functions_plan_once.sql
CREATE FUNCTION tasklane.raise_points(p_task_types text[], p_priorities smallint[], p_turns double precision[]) RETURNS integer
    LANGUAGE plpgsql
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
    i integer;
    top tid;
    top_turn double precision;
    raised integer := 0;
BEGIN
    FOR i IN 1 .. coalesce(cardinality(p_task_types), 0) LOOP
        SELECT p.ctid, p.turn INTO top, top_turn
        FROM tasklane.turn_points p
        WHERE p.task_type = p_task_types[i] AND p.priority = p_priorities[i]
        ORDER BY p.turn DESC
        LIMIT 1;
        IF NOT FOUND THEN
            -- One claim creates a point; another one creating it at the same time goes
            -- on without it. The class 0x746c7470 is this lock's alone.
            IF pg_try_advisory_xact_lock(1953264752, hashtext(p_task_types[i] || '/' || p_priorities[i])) THEN
                INSERT INTO tasklane.turn_points (task_type, priority, turn)
                VALUES (p_task_types[i], p_priorities[i], p_turns[i]);
                raised := raised + 1;
            END IF;
        ELSIF top_turn < p_turns[i] THEN
            -- A point another claim holds is skipped, never waited for: that claim
            -- raises it too. Found by its address, not by its key, which every version
            -- a held snapshot keeps shares.
            UPDATE tasklane.turn_points p
            SET turn = p_turns[i]
            WHERE p.ctid = (SELECT x.ctid FROM tasklane.turn_points x
                            WHERE x.ctid = top AND x.turn < p_turns[i]
                            FOR UPDATE OF x SKIP LOCKED);
            IF FOUND THEN
                raised := raised + 1;
            END IF;
        END IF;
    END LOOP;
    RETURN raised;
END
$$;
