-- V49: under a held snapshot, the submits' and the prunings' lookups by id, and the
-- count of an app's subjects, no longer walk the dead entries it keeps.
-- Measured in the soak (1,000 tasks a second, two replicas, a REPEATABLE READ snapshot
-- held for 5 minutes), with auto_explain:
-- - The mirror's update trigger found the rows already claimable by
--   `id = ANY (ids) AND state IN (...)`, and its plan, kept for the session, read the
--   claimable partial index task_queue_turns whole with the ids as a filter: 38,000-
--   50,000 pages a statement. The ids are now looked up alone, the state tested after.
-- - The deletes that follow a task's deletion (its mirror row, events, attempts and
--   webhook deliveries) joined the deleted rows to the table: a nested loop over the
--   mirror's whole primary key (22,800 pages a pruning pass) and a hash join over the
--   deliveries' task index (14,400). Each now finds its rows by `= ANY (ARRAY(...))`.
-- - tasklane.active_subjects counted an app's subjects with claimable tasks by a skip
--   scan of task_queue_turns from each subject's last turn down: a subject with none
--   left walked every entry the hold kept of it (24,000-25,000 pages a call, at every
--   submit). It now takes the floor (tasklane.turn_floors) and counts the subjects with
--   claimable tasks at or above it: the entries below the floor are rejected in the
--   index, without a visit to the table. tasklane.take_turns calls it only where the
--   step is needed (a subject with claimable tasks already, or several tasks of one
--   subject in one statement): a subject with none takes the claims' point, whatever
--   the step.
-- Forward-only: never edit once landed.

CREATE OR REPLACE FUNCTION tasklane.delete_task_queue() RETURNS trigger
    LANGUAGE plpgsql
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
BEGIN
    -- By id alone: a join to the deleted rows may be planned as a walk of the whole
    -- primary key, dead entries a held snapshot keeps included.
    DELETE FROM tasklane.task_queue q WHERE q.id = ANY (ARRAY(SELECT g.id FROM gone g));
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION tasklane.delete_task_events() RETURNS trigger
    LANGUAGE plpgsql
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
BEGIN
    DELETE FROM tasklane.task_events e WHERE e.task_id = ANY (ARRAY(SELECT g.id FROM gone g));
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION tasklane.delete_task_attempts() RETURNS trigger
    LANGUAGE plpgsql
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
BEGIN
    DELETE FROM tasklane.task_attempts a WHERE a.task_id = ANY (ARRAY(SELECT g.id FROM gone g));
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION tasklane.delete_task_deliveries() RETURNS trigger
    LANGUAGE plpgsql
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
BEGIN
    DELETE FROM tasklane.webhook_deliveries d
    WHERE d.task_id = ANY (ARRAY(SELECT g.id FROM gone g)) AND d.status <> 'delivered';
    RETURN NULL;
END
$$;

CREATE FUNCTION tasklane.active_subjects(p_task_type text, p_priority smallint, p_app text,
                                         p_floor double precision, p_cap integer)
RETURNS integer
LANGUAGE plpgsql STABLE
SET enable_seqscan TO 'off'
SET jit TO 'off'
AS $$
BEGIN
    -- One index probe per subject (task_queue_turns), up to p_cap. Backwards, from each
    -- subject's last turn: a subject's first entries are those of its tasks claimed
    -- since the last vacuum, which a forward probe would walk one by one. The turn's
    -- bound is tested on the index entry: a subject with nothing claimable at or above
    -- the floor has its entries below it stepped over in the index, each without a
    -- visit to the table (which is what a dead entry costs).
    -- PL/pgSQL, not SQL: its plans are kept for the session, where an SQL function's
    -- are made again at every call.
    RETURN (WITH RECURSIVE s(subject, n) AS (
        (SELECT q.subject, 1
         FROM tasklane.task_queue q
         WHERE q.task_type = p_task_type AND q.priority = p_priority AND q.app = p_app
           AND q.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
           AND q.turn >= p_floor
         ORDER BY q.subject DESC, q.turn DESC
         LIMIT 1)
        UNION ALL
        SELECT (SELECT q.subject
                FROM tasklane.task_queue q
                WHERE q.task_type = p_task_type AND q.priority = p_priority AND q.app = p_app
                  AND q.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
                  AND q.subject < s.subject AND q.turn >= p_floor
                ORDER BY q.subject DESC, q.turn DESC
                LIMIT 1),
               s.n + 1
        FROM s
        WHERE s.subject IS NOT NULL AND s.n < p_cap
    )
    SELECT count(subject)::integer FROM s);
END
$$;

COMMENT ON FUNCTION tasklane.active_subjects(text, smallint, text, double precision, integer) IS
$$The number of usage subjects ('' counts as one) of app p_app with claimable tasks of
type p_task_type at priority p_priority at or above turn p_floor (the claims' floor),
counted up to p_cap, by a skip scan of task_queue_turns (one probe per subject). Called by
tasklane.take_turns.$$;

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
             WHERE p.task_type = p_task_type[1] AND p.priority = p_priority[1]),
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
        step := tasklane.active_subjects(p_task_type[1], p_priority[1], p_app[1], floor_turn, 100)::double precision
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
                    WHERE p.task_type = s.task_type AND p.priority = s.priority),
                   (SELECT q.turn FROM tasklane.task_queue q
                    WHERE q.task_type = s.task_type AND q.priority = s.priority
                      AND q.state IN ('queued', 'waiting_for_retry') AND NOT q.behind
                      AND q.turn >= s.floor_turn
                    ORDER BY q.turn
                    LIMIT 1), 0), s.floor_turn) AS now_turn,
               -- The step counts the app's subjects; it is needed only where a
               -- subject has claimable tasks already or several in this statement.
               CASE WHEN bool_or(s.last_turn IS NOT NULL OR s.tasks > 1) THEN
                   (tasklane.active_subjects(s.task_type, s.priority, s.app, s.floor_turn, 100)
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


COMMENT ON FUNCTION tasklane.take_turns(uuid[], text[], smallint[], text[], text[]) IS
$$The turns of tasks becoming claimable (parallel arrays: id, task type, priority, app,
usage subject with '' for none), by start-time fair queueing over the usage subjects of
each task type and priority: a subject's next task takes its turn one step after the
subject's last claimable task at or above the floor (tasklane.turn_floors), and no
earlier than where the claims have got (tasklane.turn_points, or the lowest claimable
turn when no claim has recorded one) nor than the floor. The step of an app's subjects
is the number of its subjects with claimable tasks at or above the floor (counted up to
100, this statement's new ones included) divided by the app's weight
(tasklane.app_weights, default 1): each app's subjects share its turns, and apps share
the claims by weight. Several tasks of one subject in one statement take consecutive
turns in id order. Reads only; called by the mirror's triggers, which hold the floors it
reads.$$;

DROP FUNCTION tasklane.active_subjects(text, smallint, text, integer);

CREATE OR REPLACE FUNCTION tasklane.sync_task_queue() RETURNS trigger
    LANGUAGE plpgsql
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
DECLARE
    written bigint;
    ids uuid[]; types text[]; priorities smallint[]; apps text[]; subjects text[];
    fresh_ids uuid[]; claimable_ids uuid[];
BEGIN
    -- The statement wrote its own tasks' mirror rows and notifications (below): the
    -- setting is consumed here, so the next statement of the transaction is synced.
    IF current_setting('tasklane.queue_written', true) = 'on' THEN
        PERFORM set_config('tasklane.queue_written', '', true);
        RETURN NULL;
    END IF;
    -- The mirror is read and written by the updated tasks' ids alone (an index probe
    -- each), never joined to the transition table: a join may be planned as a hash of a
    -- scan of the mirror's whole primary key, and a plan kept from a mirror of a few
    -- pages as a sequential scan (hence no sequential scans in this function's plans):
    -- either walks every dead row a snapshot held open keeps from vacuum.
    fresh_ids := ARRAY(SELECT n.id FROM fresh n);
    IF EXISTS (SELECT 1 FROM tasklane.webhook_endpoints WHERE NOT disabled) THEN
        WITH ended AS (
            DELETE FROM tasklane.task_queue q
            WHERE q.id = ANY (ARRAY(SELECT n.id FROM fresh n
                                    WHERE n.state IN ('succeeded', 'failed', 'cancelled')))
            RETURNING q.id
        )
        INSERT INTO tasklane.webhook_deliveries
            (endpoint_id, app, scope_id, task_id, event, created_at)
        SELECT e.id, d.app, d.scope_id, d.id, 'task.' || d.state, coalesce(d.finished_at, now())
        FROM ended x
        JOIN fresh d ON d.id = x.id
        JOIN tasklane.webhook_endpoints e
          ON e.app = d.app AND NOT e.disabled AND ('task.' || d.state) = ANY (e.events);
        GET DIAGNOSTICS written = ROW_COUNT;
        -- The deliverers of every replica LISTEN: one NOTIFY per statement that wrote.
        IF written > 0 THEN
            PERFORM pg_notify('tasklane_webhooks', '');
        END IF;
    ELSE
        DELETE FROM tasklane.task_queue q
        WHERE q.id = ANY (ARRAY(SELECT n.id FROM fresh n
                                WHERE n.state IN ('succeeded', 'failed', 'cancelled')));
    END IF;
    -- The tasks becoming claimable (from running, cancelling or finished) take a turn;
    -- the others keep theirs. Every claimable task written holds its floor first.
    SELECT array_agg(n.task_type), array_agg(n.priority)
    INTO types, priorities
    FROM fresh n
    WHERE n.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback');
    IF types IS NOT NULL THEN
        PERFORM tasklane.hold_floors(types, priorities);
    END IF;
    -- Those already claimable in the mirror keep their turns.
    -- Found by id alone, the state tested after (OFFSET 0): with the state beside the
    -- ids, the plan kept for the session may read a claimable partial index whole.
    claimable_ids := ARRAY(SELECT o.id
                           FROM (SELECT o.id, o.state FROM tasklane.task_queue o
                                 WHERE o.id = ANY (fresh_ids)
                                 OFFSET 0) o
                           WHERE o.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback'));
    SELECT array_agg(n.id), array_agg(n.task_type), array_agg(n.priority), array_agg(n.app),
           array_agg(coalesce(n.usage_subject, ''))
    INTO ids, types, priorities, apps, subjects
    FROM fresh n
    WHERE n.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
      AND NOT (n.id = ANY (claimable_ids));
    INSERT INTO tasklane.task_queue AS q
        (id, state, priority, run_at, deadline_at, lease_expires_at, task_type, app,
         scope_id, privacy, resource, subject, turn, behind)
    SELECT n.id, n.state, n.priority, n.run_at, n.deadline_at, n.lease_expires_at,
           n.task_type, n.app, n.scope_id, n.privacy, n.resource,
           coalesce(n.usage_subject, ''),
           -- The row to insert carries the turn it keeps, since its CHECK is tested
           -- before the conflict is found.
           coalesce(t.turn, o.turn),
           -- A new turn is never below the floor (take_turns); a kept one is behind
           -- when the floor has passed it, in its (perhaps new) priority.
           t.turn IS NULL AND coalesce(o.turn < f.floor, false)
    FROM fresh n
    LEFT JOIN (SELECT o.id, o.state, o.priority, o.run_at, o.deadline_at, o.lease_expires_at,
                      o.turn
               FROM tasklane.task_queue o
               WHERE o.id = ANY (fresh_ids)
               OFFSET 0) o ON o.id = n.id
    LEFT JOIN tasklane.turn_floors f ON f.task_type = n.task_type AND f.priority = n.priority
    LEFT JOIN tasklane.take_turns(ids, types, priorities, apps, subjects) t ON t.id = n.id
    WHERE n.state NOT IN ('succeeded', 'failed', 'cancelled')
      AND (o.id IS NULL
           OR (o.state, o.priority, o.run_at, o.deadline_at, o.lease_expires_at)
              IS DISTINCT FROM
              (n.state, n.priority, n.run_at, n.deadline_at, n.lease_expires_at))
    ON CONFLICT (id) DO UPDATE
    SET state = excluded.state, priority = excluded.priority, run_at = excluded.run_at,
        deadline_at = excluded.deadline_at, lease_expires_at = excluded.lease_expires_at,
        turn = excluded.turn, behind = excluded.behind;
    RETURN NULL;
END
$$;
