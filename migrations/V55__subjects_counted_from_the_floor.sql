-- V55: an app's subjects with claimable tasks are counted without walking the history
-- of the subjects a submit names. Forward-only: never edit once landed.
--
-- tasklane.active_subjects counted them by a skip scan of task_queue_turns (task type,
-- priority, app, subject, turn), one probe per subject, each `subject < previous AND
-- turn >= floor`. The turn there is not a bound of the scan (the subject before it is
-- not fixed), so a probe steps over every entry of a subject below the floor: each
-- without a visit to the table, but while a snapshot is held open none of them is ever
-- removed. A submit counts its app's subjects whenever its subject has a claimable task
-- or it submits several of them, so every batch of one subject's tasks walked that
-- subject's whole history since the hold began: in an 8-minute soak (1,000 tasks/s, a
-- REPEATABLE READ transaction held from minute 1) the count read 860-880 index pages a
-- call 3.5 minutes into the hold, most of the batched submit's 975 pages (auto_explain,
-- nested statements), and it grows with every minute the hold lasts.
--
-- The subjects the submit names are now probed on their own, bounded by the floor
-- (subject = it AND turn >= floor: only the entries since the floor), and the skip scan
-- covers the ranges between them; the count is the same. A subject the submit does not
-- name still has its entries below the floor stepped over (an idle subject of the same
-- app). The function takes the subjects as a sixth argument; the five-argument one is
-- dropped (only tasklane.take_turns called it, and it is replaced here).

DROP FUNCTION tasklane.active_subjects(text, smallint, text, double precision, integer);

CREATE FUNCTION tasklane.active_subjects(p_task_type text, p_priority smallint, p_app text,
                                         p_floor double precision, p_cap integer,
                                         p_named text[])
RETURNS integer
LANGUAGE plpgsql STABLE
SET enable_seqscan TO 'off'
SET enable_bitmapscan TO 'off'
SET jit TO 'off'
AS $$
DECLARE
    -- The named subjects, highest first: the walk goes down from the top.
    named text[] := ARRAY(SELECT DISTINCT s FROM unnest(p_named) AS s
                          WHERE s IS NOT NULL ORDER BY s DESC);
    i integer := 1;
    -- The walk's upper bound (exclusive); NULL above every subject.
    upper text;
    next_subject text;
    counted integer := 0;
BEGIN
    LOOP
        -- The highest subject with a claimable task at or above the floor below upper
        -- and above the next named subject: one probe backwards, which steps over the
        -- entries below the floor of the subjects in that range without a visit to the
        -- table. Four statements for the four combinations of bounds, so each plan
        -- reads the index from its bounds.
        IF upper IS NULL AND i > cardinality(named) THEN
            SELECT q.subject INTO next_subject
            FROM tasklane.task_queue q
            WHERE q.task_type = p_task_type AND q.priority = p_priority AND q.app = p_app
              AND q.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
              AND q.turn >= p_floor
            ORDER BY q.subject DESC, q.turn DESC
            LIMIT 1;
        ELSIF upper IS NULL THEN
            SELECT q.subject INTO next_subject
            FROM tasklane.task_queue q
            WHERE q.task_type = p_task_type AND q.priority = p_priority AND q.app = p_app
              AND q.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
              AND q.subject > named[i] AND q.turn >= p_floor
            ORDER BY q.subject DESC, q.turn DESC
            LIMIT 1;
        ELSIF i > cardinality(named) THEN
            SELECT q.subject INTO next_subject
            FROM tasklane.task_queue q
            WHERE q.task_type = p_task_type AND q.priority = p_priority AND q.app = p_app
              AND q.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
              AND q.subject < upper AND q.turn >= p_floor
            ORDER BY q.subject DESC, q.turn DESC
            LIMIT 1;
        ELSE
            SELECT q.subject INTO next_subject
            FROM tasklane.task_queue q
            WHERE q.task_type = p_task_type AND q.priority = p_priority AND q.app = p_app
              AND q.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
              AND q.subject < upper AND q.subject > named[i] AND q.turn >= p_floor
            ORDER BY q.subject DESC, q.turn DESC
            LIMIT 1;
        END IF;
        IF FOUND THEN
            counted := counted + 1;
            EXIT WHEN counted >= p_cap;
            upper := next_subject;
            CONTINUE;
        END IF;
        EXIT WHEN i > cardinality(named);
        -- The named subject itself, from its last entry down to the floor (a bound of
        -- this scan): the entries of its tasks claimed before the floor are not read.
        PERFORM 1
        FROM tasklane.task_queue q
        WHERE q.task_type = p_task_type AND q.priority = p_priority AND q.app = p_app
          AND q.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
          AND q.subject = named[i] AND q.turn >= p_floor
        ORDER BY q.turn DESC
        LIMIT 1;
        IF FOUND THEN
            counted := counted + 1;
            EXIT WHEN counted >= p_cap;
        END IF;
        upper := named[i];
        i := i + 1;
    END LOOP;
    RETURN counted;
END
$$;

COMMENT ON FUNCTION tasklane.active_subjects(text, smallint, text, double precision, integer, text[]) IS
$$The number of usage subjects ('' counts as one) of app p_app with claimable tasks of
type p_task_type at priority p_priority at or above turn p_floor (the claims' floor),
counted up to p_cap. The subjects in p_named (those a submit names) are probed each on
its own from its last entry down to the floor; the ranges between them by a skip scan of
task_queue_turns (one probe per subject found), which steps over the entries below the
floor of the subjects it passes. Called by tasklane.take_turns.$$;

CREATE OR REPLACE FUNCTION tasklane.take_turns(p_id uuid[], p_task_type text[], p_priority smallint[], p_app text[], p_subject text[]) RETURNS TABLE(id uuid, turn double precision)
    LANGUAGE plpgsql STABLE
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
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
             WHERE f.task_type = p_task_type[1] AND f.priority = p_priority[1]),
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
                         WHERE f.task_type = g.task_type AND f.priority = g.priority),
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
