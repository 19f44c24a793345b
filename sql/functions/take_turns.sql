-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.take_turns, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The turns of tasks becoming claimable (parallel arrays: id, task type, priority, app,
-- usage subject with '' for none), by start-time fair queueing over the usage subjects of
-- each task type and priority: a subject's next task takes its turn one step after the
-- subject's last claimable task at or above the floor (tasklane.turn_floors), and no
-- earlier than where the claims have got (tasklane.turn_points, or the lowest claimable
-- turn when no claim has recorded one) nor than the floor. The step of an app's subjects
-- is the number of its subjects with claimable tasks at or above the floor (counted up to
-- 100, this statement's new ones included) divided by the app's weight
-- (tasklane.app_weights, default 1): each app's subjects share its turns, and apps share
-- the claims by weight. Several tasks of one subject in one statement take consecutive
-- turns in id order. Reads only; called by the mirror's triggers, which hold the floors it
-- reads.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function take_turns: migrations/V38__fair_turns.sql, migrations/V40__claims_start_at_the_floor.sql, migrations/V47__held_snapshot_plans.sql, migrations/V49__held_snapshot_lookups.sql, migrations/V54__claims_point_read_from_its_top.sql, migrations/V55__subjects_counted_from_the_floor.sql, migrations/V56__floors_read_from_their_top.sql, migrations/V57__switched_functions_plan_once.sql
CREATE FUNCTION tasklane.take_turns(p_id uuid[], p_task_type text[], p_priority smallint[], p_app text[], p_subject text[]) RETURNS TABLE(id uuid, turn double precision)
    LANGUAGE plpgsql STABLE
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
#variable_conflict use_column
DECLARE
    now_turn double precision;
    last_turn double precision;
    floor_turn double precision;
    step double precision;
BEGIN
    -- PL/pgSQL, not SQL: its statements are planned once per session, where an SQL
    -- function's would be planned again at every call (milliseconds, at every submit).
    -- The update trigger calls it for every statement, a heartbeat's too, mostly with
    -- nothing becoming claimable.
    IF coalesce(cardinality(p_id), 0) = 0 THEN
        RETURN;
    END IF;
    IF cardinality(p_id) = 1 THEN
        -- A single submit, the common case: the same turn as below, without grouping.
        floor_turn := coalesce(
            (SELECT f.floor FROM tasklane.turn_floors f
             WHERE f.task_type = p_task_type[1] AND f.priority = p_priority[1]
             ORDER BY f.floor DESC
             LIMIT 1),
            '-Infinity');
        now_turn := greatest(coalesce(
            (SELECT p.turn FROM tasklane.turn_points p
             WHERE p.task_type = p_task_type[1] AND p.priority = p_priority[1]
             ORDER BY p.turn DESC
             LIMIT 1),
            (SELECT q.turn FROM tasklane.task_queue q
             WHERE q.task_type = p_task_type[1] AND q.priority = p_priority[1]
               AND q.state IN ('queued', 'waiting_for_retry') AND NOT q.behind
               AND q.turn >= floor_turn
             ORDER BY q.turn
             LIMIT 1), 0), floor_turn);
        last_turn := (SELECT q.turn
                      FROM tasklane.task_queue q
                      WHERE q.task_type = p_task_type[1] AND q.priority = p_priority[1]
                        AND q.app = p_app[1] AND q.subject = p_subject[1]
                        AND q.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
                        AND q.turn >= floor_turn
                      ORDER BY q.turn DESC
                      LIMIT 1);
        id := p_id[1];
        -- A subject with no claimable task takes the claims' point: its step, which
        -- counts the app's subjects, is then not needed.
        IF last_turn IS NULL THEN
            turn := now_turn;
            RETURN NEXT;
            RETURN;
        END IF;
        step := tasklane.active_subjects(p_task_type[1], p_priority[1], p_app[1], floor_turn, 100,
                                         ARRAY[p_subject[1]])::double precision
                / coalesce((SELECT w.weight FROM tasklane.app_weights w WHERE w.app = p_app[1]), 1);
        turn := greatest(now_turn, last_turn + step);
        RETURN NEXT;
        RETURN;
    END IF;
    RETURN QUERY
    WITH taking AS (
        SELECT *
        FROM unnest(p_id, p_task_type, p_priority, p_app, p_subject)
            AS r(id, task_type, priority, app, subject)
    ), floors AS (
        SELECT g.task_type, g.priority,
               coalesce((SELECT f.floor FROM tasklane.turn_floors f
                         WHERE f.task_type = g.task_type AND f.priority = g.priority
                         ORDER BY f.floor DESC
                         LIMIT 1),
                        '-Infinity') AS floor_turn
        FROM (SELECT DISTINCT r.task_type, r.priority FROM taking r) g
    ), subjects AS (
        SELECT r.task_type, r.priority, r.app, r.subject, l.floor_turn,
               (SELECT q.turn
                FROM tasklane.task_queue q
                WHERE q.task_type = r.task_type AND q.priority = r.priority
                  AND q.app = r.app AND q.subject = r.subject
                  AND q.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
                  AND q.turn >= l.floor_turn
                ORDER BY q.turn DESC
                LIMIT 1) AS last_turn,
               count(*) AS tasks
        FROM taking r
        JOIN floors l USING (task_type, priority)
        GROUP BY r.task_type, r.priority, r.app, r.subject, l.floor_turn
    ), apps AS (
        SELECT s.task_type, s.priority, s.app,
               -- Where the claims have got; without a point (no claim yet, or after a
               -- crash), the lowest claimable turn. Only then: that scan starts at the
               -- front of the claimable index, whose entries of the tasks claimed since
               -- the last vacuum it walks one by one while a backlog drains.
               greatest(coalesce(
                   (SELECT p.turn FROM tasklane.turn_points p
                    WHERE p.task_type = s.task_type AND p.priority = s.priority
                    ORDER BY p.turn DESC
                    LIMIT 1),
                   (SELECT q.turn FROM tasklane.task_queue q
                    WHERE q.task_type = s.task_type AND q.priority = s.priority
                      AND q.state IN ('queued', 'waiting_for_retry') AND NOT q.behind
                      AND q.turn >= s.floor_turn
                    ORDER BY q.turn
                    LIMIT 1), 0), s.floor_turn) AS now_turn,
               -- The step counts the app's subjects; it is needed only where a
               -- subject has claimable tasks already or several in this statement.
               CASE WHEN bool_or(s.last_turn IS NOT NULL OR s.tasks > 1) THEN
                   (tasklane.active_subjects(s.task_type, s.priority, s.app, s.floor_turn, 100,
                                             array_agg(s.subject))
                    + count(*) FILTER (WHERE s.last_turn IS NULL))::double precision
                   / coalesce((SELECT w.weight FROM tasklane.app_weights w WHERE w.app = s.app), 1)
               ELSE 1 END AS step
        FROM subjects s
        GROUP BY s.task_type, s.priority, s.app, s.floor_turn
    )
    SELECT r.id,
           greatest(a.now_turn, s.last_turn + a.step)
           + a.step * (row_number() OVER (PARTITION BY r.task_type, r.priority, r.app, r.subject
                                           ORDER BY r.id) - 1)
    FROM taking r
    JOIN subjects s USING (task_type, priority, app, subject)
    JOIN apps a USING (task_type, priority, app);
END
$$;
