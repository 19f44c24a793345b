-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.take_turns, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The turns of tasks becoming claimable (parallel arrays: id, task type, priority, app,
-- usage subject with '' for none), by start-time fair queueing over the usage subjects of
-- each task type and priority: a subject's next task takes its turn one step after the
-- subject's last claimable task, and no earlier than where the claims have got
-- (tasklane.turn_points, or the lowest claimable turn when no claim has recorded one). The
-- step of an app's subjects is the number of its subjects with claimable tasks (counted
-- up to 100, this statement's new ones included) divided by the app's weight
-- (tasklane.app_weights, default 1): each app's subjects share its turns, and apps share
-- the claims by weight. Several tasks of one subject in one statement take consecutive
-- turns in id order. Reads only; called by the mirror's triggers.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function take_turns: migrations/V38__fair_turns.sql
CREATE FUNCTION tasklane.take_turns(p_id uuid[], p_task_type text[], p_priority smallint[], p_app text[], p_subject text[]) RETURNS TABLE(id uuid, turn double precision)
    LANGUAGE plpgsql STABLE
    AS $$
#variable_conflict use_column
DECLARE
    now_turn double precision;
    last_turn double precision;
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
        now_turn := coalesce(
            (SELECT p.turn FROM tasklane.turn_points p
             WHERE p.task_type = p_task_type[1] AND p.priority = p_priority[1]),
            (SELECT q.turn FROM tasklane.task_queue q
             WHERE q.task_type = p_task_type[1] AND q.priority = p_priority[1]
               AND q.state IN ('queued', 'waiting_for_retry')
             ORDER BY q.turn
             LIMIT 1), 0);
        last_turn := (SELECT q.turn
                      FROM tasklane.task_queue q
                      WHERE q.task_type = p_task_type[1] AND q.priority = p_priority[1]
                        AND q.app = p_app[1] AND q.subject = p_subject[1]
                        AND q.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
                      ORDER BY q.turn DESC
                      LIMIT 1);
        step := (tasklane.active_subjects(p_task_type[1], p_priority[1], p_app[1], 100)
                 + CASE WHEN last_turn IS NULL THEN 1 ELSE 0 END)::double precision
                / coalesce((SELECT w.weight FROM tasklane.app_weights w WHERE w.app = p_app[1]), 1);
        id := p_id[1];
        turn := greatest(now_turn, last_turn + step);
        RETURN NEXT;
        RETURN;
    END IF;
    RETURN QUERY
    WITH taking AS (
        SELECT *
        FROM unnest(p_id, p_task_type, p_priority, p_app, p_subject)
            AS r(id, task_type, priority, app, subject)
    ), subjects AS (
        SELECT r.task_type, r.priority, r.app, r.subject,
               (SELECT q.turn
                FROM tasklane.task_queue q
                WHERE q.task_type = r.task_type AND q.priority = r.priority
                  AND q.app = r.app AND q.subject = r.subject
                  AND q.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
                ORDER BY q.turn DESC
                LIMIT 1) AS last_turn
        FROM taking r
        GROUP BY r.task_type, r.priority, r.app, r.subject
    ), apps AS (
        SELECT s.task_type, s.priority, s.app,
               -- Where the claims have got; without a point (no claim yet, or after a
               -- crash), the lowest claimable turn. Only then: that scan starts at the
               -- front of the claimable index, whose entries of the tasks claimed since
               -- the last vacuum it walks one by one while a backlog drains.
               coalesce(
                   (SELECT p.turn FROM tasklane.turn_points p
                    WHERE p.task_type = s.task_type AND p.priority = s.priority),
                   (SELECT q.turn FROM tasklane.task_queue q
                    WHERE q.task_type = s.task_type AND q.priority = s.priority
                      AND q.state IN ('queued', 'waiting_for_retry')
                    ORDER BY q.turn
                    LIMIT 1), 0) AS now_turn,
               (tasklane.active_subjects(s.task_type, s.priority, s.app, 100)
                + count(*) FILTER (WHERE s.last_turn IS NULL))::double precision
               / coalesce((SELECT w.weight FROM tasklane.app_weights w WHERE w.app = s.app), 1)
                   AS step
        FROM subjects s
        GROUP BY s.task_type, s.priority, s.app
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
