-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.raise_floors, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Raises the claims' floors (tasklane.turn_floors; parallel arrays: task type, priority,
-- target turn) to their targets, points the claims had got to when the floor keeper read
-- them with every writer of claimable rows in flight then since finished. Marks behind
-- every claimable mirror row between a floor and its target first; a passed task another
-- transaction holds stops its floor below it. A floor another replica is raising (its
-- advisory lock of class 1953264754, tried) is left to it. Returns the floors raised and
-- the rows marked behind. Called by the floor keeper (sql/floors_raise.sql).
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function raise_floors: migrations/V50__raise_floors_function.sql, migrations/V56__floors_read_from_their_top.sql, migrations/V57__switched_functions_plan_once.sql
CREATE FUNCTION tasklane.raise_floors(p_task_type text[], p_priority smallint[], p_target double precision[]) RETURNS TABLE(raised bigint, marked bigint)
    LANGUAGE plpgsql
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_sort TO 'off'
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH due AS MATERIALIZED (
        SELECT g.task_type, g.priority, f.floor, f.at, g.target
        FROM unnest(p_task_type, p_priority, p_target) AS g(task_type, priority, target)
        -- The floor's current row, from the top of its index, and its address: by the
        -- key, both would visit every version of it a held snapshot keeps.
        CROSS JOIN LATERAL (
            SELECT f.floor, f.ctid AS at FROM tasklane.turn_floors f
            WHERE f.task_type = g.task_type AND f.priority = g.priority
            ORDER BY f.floor DESC
            LIMIT 1) f
        WHERE g.target > f.floor
          -- The class 0x746c7472 is the raisers' alone.
          AND pg_try_advisory_xact_lock(1953264754, hashtext(g.task_type || '/' || g.priority))
    ), passed AS MATERIALIZED (
        -- Each floor's range of the claimable index on its own, in the index's order
        -- (sorts are priced out in this function): joined, the planner may hash a scan
        -- of the whole index against the floors, and unordered it may read
        -- task_queue_turns, the type's entries with the turn only a filter; either walks
        -- every dead entry of the type. The limit (never reached) keeps the subquery
        -- apart.
        SELECT q.id, q.task_type, q.priority, q.turn
        FROM due d
        CROSS JOIN LATERAL (
            SELECT q.id, q.task_type, q.priority, q.turn
            FROM tasklane.task_queue q
            WHERE q.task_type = d.task_type AND q.priority = d.priority
              AND q.state IN ('queued', 'waiting_for_retry') AND NOT q.behind
              AND q.turn >= d.floor AND q.turn < d.target
            ORDER BY q.priority DESC, q.turn, q.id
            LIMIT 1000000) q
    ), locked AS MATERIALIZED (
        SELECT t.id
        FROM tasklane.tasks t
        WHERE t.id = ANY (ARRAY(SELECT p.id FROM passed p))
        FOR UPDATE OF t SKIP LOCKED
    ), marking AS (
        -- By id alone: the state is written so that it implies no partial index's
        -- predicate (the concatenation hides the column from the planner), or the plan
        -- may read task_queue_turns whole with the ids as a filter.
        UPDATE tasklane.task_queue q
        SET behind = true
        WHERE q.id = ANY (ARRAY(SELECT l.id FROM locked l))
          AND q.state || '' IN ('queued', 'waiting_for_retry') AND NOT q.behind
        RETURNING q.id
    ), raising AS (
        UPDATE tasklane.turn_floors f
        SET floor = least(d.target,
                          (SELECT min(p.turn) FROM passed p
                           WHERE p.task_type = d.task_type AND p.priority = d.priority
                             AND p.id NOT IN (SELECT l.id FROM locked l)))
        FROM due d
        WHERE f.ctid = d.at
          AND f.floor < d.target
        RETURNING f.task_type
    )
    SELECT (SELECT count(*) FROM raising), (SELECT count(*) FROM marking);
END
$$;
