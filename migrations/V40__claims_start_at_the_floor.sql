-- Claims start at the floor: a held vacuum horizon no longer makes every claim walk the
-- dead index entries of the tasks claimed since. Forward-only: never edit once landed.
--
-- A claimed task's mirror row leaves the claimable index by an update, which leaves the
-- old entry behind until vacuum removes it. While any snapshot older than those rows is
-- open (pg_dump, a long query, a forgotten BEGIN, a standby's feedback) vacuum cannot,
-- and a claim read in claim order from the front of its type's entries walked all of
-- them: 8.7 index entries read per task became 19,538 within 3 minutes at 400 tasks/s.
--
-- Each task type and priority now has a floor (tasklane.turn_floors): claims read the
-- claimable index from the floor up, so the entries below it, those of the tasks the
-- claims have passed, are never walked. The maintenance role raises each floor to where
-- the claims have got (tasklane.turn_points) every fraction of a second; a claimable task
-- the floor passes (a retry in backoff, a task of a stopped app or waiting for a resource
-- slot, one another claim had locked) is marked behind and leaves the claimable index for
-- task_queue_behind, which every claim reads whole and which holds only such tasks. So a
-- claim reads the live tasks and the entries of the tasks claimed since the floor last
-- moved, whatever the age of the oldest snapshot.
--
-- The floor never passes a task still being given its turn: whoever writes a claimable
-- mirror row holds the floor of its task type and priority (a shared transaction advisory
-- lock, tasklane.hold_floors) until it commits, and the floor is raised only under that
-- lock taken exclusively (tried, never waited for), in a statement whose snapshot comes
-- after it. A new turn is never below the floor (tasklane.take_turns).

ALTER TABLE tasklane.task_queue ADD COLUMN behind boolean NOT NULL DEFAULT false;

-- Logged, unlike turn_points: a group's row must exist for the claims to read its tasks,
-- and its floor must not fall back below the tasks marked behind.
CREATE TABLE tasklane.turn_floors (
    task_type text NOT NULL,
    priority  smallint NOT NULL,
    floor     double precision NOT NULL DEFAULT '-Infinity',
    PRIMARY KEY (task_type, priority)
);
COMMENT ON TABLE tasklane.turn_floors IS
$$Where the claims of each task type and priority start reading the claimable index: every
claimable mirror row below it is marked behind (task_queue_behind). One row for every task
type and priority that has had a claimable task (written by tasklane.hold_floors); raised
by the maintenance role to the turn point.$$;

INSERT INTO tasklane.turn_floors (task_type, priority)
SELECT DISTINCT task_type, priority
FROM tasklane.task_queue
WHERE state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback');

DROP INDEX tasklane.task_queue_claimable;
CREATE INDEX task_queue_claimable ON tasklane.task_queue (task_type, priority DESC, turn, id)
    WHERE state IN ('queued', 'waiting_for_retry') AND NOT behind;
-- The claimable tasks the floor has passed, read whole by every claim: as few as the
-- tasks left waiting, and the entries of those claimed since the last vacuum.
CREATE INDEX task_queue_behind ON tasklane.task_queue (task_type, priority DESC, turn, id)
    WHERE state IN ('queued', 'waiting_for_retry') AND behind;

CREATE FUNCTION tasklane.hold_floors(p_task_type text[], p_priority smallint[]) RETURNS void
LANGUAGE plpgsql
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
    WHERE NOT EXISTS (SELECT 1 FROM tasklane.turn_floors f
                      WHERE f.task_type = u.task_type AND f.priority = u.priority)
    ON CONFLICT DO NOTHING;
END
$$;
COMMENT ON FUNCTION tasklane.hold_floors(text[], smallint[]) IS
$$Holds the floors (tasklane.turn_floors) of the given task types and priorities until the
transaction ends, creating the missing ones at -Infinity: called by the mirror's triggers
before they write claimable rows, so no floor is raised past a task whose row is not yet
committed. Locks: a shared transaction advisory lock per task type and priority (class
1953264742); a new floor row.$$;

CREATE OR REPLACE FUNCTION tasklane.insert_task_queue() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    ids uuid[]; types text[]; priorities smallint[]; apps text[]; subjects text[];
BEGIN
    SELECT array_agg(n.id), array_agg(n.task_type), array_agg(n.priority), array_agg(n.app),
           array_agg(coalesce(n.usage_subject, ''))
    INTO ids, types, priorities, apps, subjects
    FROM fresh n
    WHERE n.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback');
    IF ids IS NOT NULL THEN
        PERFORM tasklane.hold_floors(types, priorities);
    END IF;
    INSERT INTO tasklane.task_queue
        (id, state, priority, run_at, deadline_at, lease_expires_at, task_type, app,
         scope_id, privacy, resource, subject, turn)
    SELECT n.id, n.state, n.priority, n.run_at, n.deadline_at, n.lease_expires_at,
           n.task_type, n.app, n.scope_id, n.privacy, n.resource,
           coalesce(n.usage_subject, ''), t.turn
    FROM fresh n
    LEFT JOIN tasklane.take_turns(ids, types, priorities, apps, subjects) t ON t.id = n.id
    WHERE n.state NOT IN ('succeeded', 'failed', 'cancelled');
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION tasklane.insert_task_queue() IS
$$Trigger function of tasks_queue_insert (AFTER INSERT ON tasklane.tasks, per statement):
writes the mirror rows in tasklane.task_queue of the inserted tasks that are not
finished, each claimable one with its turn (tasklane.take_turns), holding their floors
(tasklane.hold_floors). The mirror is the narrow table the claim scans, so the queue's
indexes stay small whatever tasks holds.$$;

CREATE OR REPLACE FUNCTION tasklane.take_turns(p_id uuid[], p_task_type text[], p_priority smallint[], p_app text[], p_subject text[]) RETURNS TABLE(id uuid, turn double precision)
    LANGUAGE plpgsql STABLE
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
                LIMIT 1) AS last_turn
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
               (tasklane.active_subjects(s.task_type, s.priority, s.app, 100)
                + count(*) FILTER (WHERE s.last_turn IS NULL))::double precision
               / coalesce((SELECT w.weight FROM tasklane.app_weights w WHERE w.app = s.app), 1)
                   AS step
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

CREATE OR REPLACE FUNCTION tasklane.sync_task_queue() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    written bigint;
    ids uuid[]; types text[]; priorities smallint[]; apps text[]; subjects text[];
BEGIN
    -- The statement wrote its own tasks' mirror rows and notifications (below): the
    -- setting is consumed here, so the next statement of the transaction is synced.
    IF current_setting('tasklane.queue_written', true) = 'on' THEN
        PERFORM set_config('tasklane.queue_written', '', true);
        RETURN NULL;
    END IF;
    IF EXISTS (SELECT 1 FROM tasklane.webhook_endpoints WHERE NOT disabled) THEN
        WITH ended AS (
            DELETE FROM tasklane.task_queue q USING fresh n
            WHERE q.id = n.id AND n.state IN ('succeeded', 'failed', 'cancelled')
            RETURNING n.id, n.app, n.scope_id, n.state, n.finished_at
        )
        INSERT INTO tasklane.webhook_deliveries
            (endpoint_id, app, scope_id, task_id, event, created_at)
        SELECT e.id, d.app, d.scope_id, d.id, 'task.' || d.state, coalesce(d.finished_at, now())
        FROM ended d
        JOIN tasklane.webhook_endpoints e
          ON e.app = d.app AND NOT e.disabled AND ('task.' || d.state) = ANY (e.events);
        GET DIAGNOSTICS written = ROW_COUNT;
        -- The deliverers of every replica LISTEN: one NOTIFY per statement that wrote.
        IF written > 0 THEN
            PERFORM pg_notify('tasklane_webhooks', '');
        END IF;
    ELSE
        DELETE FROM tasklane.task_queue q USING fresh n
        WHERE q.id = n.id AND n.state IN ('succeeded', 'failed', 'cancelled');
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
    SELECT array_agg(n.id), array_agg(n.task_type), array_agg(n.priority), array_agg(n.app),
           array_agg(coalesce(n.usage_subject, ''))
    INTO ids, types, priorities, apps, subjects
    FROM fresh n
    WHERE n.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
      AND NOT EXISTS (SELECT 1 FROM tasklane.task_queue o
                      WHERE o.id = n.id
                        AND o.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback'));
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
    LEFT JOIN tasklane.task_queue o ON o.id = n.id
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

COMMENT ON FUNCTION tasklane.take_turns(uuid[], text[], smallint[], text[], text[]) IS
$$The turns of tasks becoming claimable (parallel arrays: id, task type, priority, app,
usage subject with '' for none), by start-time fair queueing over the usage subjects of
each task type and priority: a subject's next task takes its turn one step after the
subject's last claimable task at or above the floor (tasklane.turn_floors), and no
earlier than where the claims have got (tasklane.turn_points, or the lowest claimable
turn when no claim has recorded one) nor than the floor. The step of an app's subjects
is the number of its subjects with claimable tasks (counted up to 100, this statement's
new ones included) divided by the app's weight (tasklane.app_weights, default 1): each
app's subjects share its turns, and apps share the claims by weight. Several tasks of one
subject in one statement take consecutive turns in id order. Reads only; called by the
mirror's triggers, which hold the floors it reads.$$;

COMMENT ON FUNCTION tasklane.sync_task_queue() IS
$$Trigger function of tasks_queue_update (AFTER UPDATE ON tasklane.tasks, per statement):
keeps the mirror tasklane.task_queue in step with the updated tasks. Finished tasks
leave it, and when any webhook endpoint is enabled their notifications are written to
webhook_deliveries with one NOTIFY tasklane_webhooks for the statement; other tasks are
upserted only when a mirrored column changed, and those becoming claimable take a turn
(tasklane.take_turns); the floors of claimable ones are held (tasklane.hold_floors), and a
kept turn the floor has passed is marked behind. A statement that wrote its own tasks'
mirror rows and notifications (the claim, the group commit) sets tasklane.queue_written
to on; the trigger then only clears it, so the next statement of the transaction is
synced again. Locks: the mirror rows it writes, and the floors' advisory locks.$$;
