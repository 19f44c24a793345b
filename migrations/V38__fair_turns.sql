-- Fair turns: claims share each priority level among apps, and within an app among its
-- usage subjects, instead of taking the oldest task first.
--
-- An app's weight: its share of the turns against the other apps with claimable work
-- (an app without a row weighs 1). Read when a task takes its turn, so a new weight
-- applies to the tasks that become claimable after it is set.
CREATE TABLE tasklane.app_weights (
    app        text PRIMARY KEY CHECK (app <> ''),
    weight     smallint NOT NULL CHECK (weight BETWEEN 1 AND 100),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Each mirror row carries its task's usage subject ('' for none: tasks without one share
-- one turn) and, while it is claimable, its turn: the claims take tasks by priority, then
-- turn, where they took them by priority, then age. A task takes a turn whenever it
-- becomes claimable (submitted, retried, requeued, waiting for an external fallback),
-- given by tasklane.take_turns below; a running task's row keeps the turn it was claimed
-- at, which nothing reads.
ALTER TABLE tasklane.task_queue
    ADD COLUMN subject text NOT NULL DEFAULT '',
    ADD COLUMN turn double precision;

-- The tasks already queued keep their order: turns 1, 2, ... per task type and priority
-- in the order the claims took them until now.
UPDATE tasklane.task_queue q
SET subject = coalesce(t.usage_subject, ''),
    turn = CASE WHEN q.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
                THEN o.n END
FROM tasklane.tasks t
JOIN (SELECT id, row_number() OVER (PARTITION BY task_type, priority ORDER BY run_at, id) AS n
      FROM tasklane.task_queue) o ON o.id = t.id
WHERE q.id = t.id;

ALTER TABLE tasklane.task_queue
    ADD CONSTRAINT task_queue_claimable_has_turn CHECK (
        turn IS NOT NULL OR state NOT IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback'));

-- The claims' order. A previous release's claim still runs (ordered by age, it sorts
-- its type's backlog instead of reading an index) until its replicas are replaced.
DROP INDEX tasklane.task_queue_claimable;
CREATE INDEX task_queue_claimable ON tasklane.task_queue (task_type, priority DESC, turn, id)
    WHERE state IN ('queued', 'waiting_for_retry');
DROP INDEX tasklane.task_queue_fallback;
CREATE INDEX task_queue_fallback ON tasklane.task_queue (task_type, priority DESC, turn, id)
    WHERE state = 'waiting_for_external_fallback';
-- Where a subject's last turn and an app's subjects with claimable work are found when a
-- task takes its turn. Partial: a claimed task leaves it without an index write.
CREATE INDEX task_queue_turns ON tasklane.task_queue (task_type, priority, app, subject, turn)
    WHERE state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback');

-- How far the claims of each task type and priority have got: the highest turn claimed.
-- A task that takes its turn starts no earlier than this, so a tenant that had nothing
-- queued comes next, not before the tasks that retries in backoff, stopped apps or busy
-- resources leave behind. Every claim raises it for what it took, skipping a row another
-- claim holds (the other claim raises it as well). UNLOGGED: it writes no WAL, and after
-- a crash or a failover turns start from the lowest claimable turn instead.
CREATE UNLOGGED TABLE tasklane.turn_points (
    task_type text NOT NULL,
    priority  smallint NOT NULL,
    turn      double precision NOT NULL,
    PRIMARY KEY (task_type, priority)
);

CREATE FUNCTION tasklane.active_subjects(p_task_type text, p_priority smallint, p_app text,
                                         p_cap integer)
RETURNS integer
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    -- One index probe per subject (task_queue_turns), up to p_cap. Backwards, from each
    -- subject's last turn: a subject's first entries are those of its tasks claimed
    -- since the last vacuum, which a forward probe would walk one by one.
    -- PL/pgSQL, not SQL: its plans are kept for the session, where an SQL function's
    -- are made again at every call.
    RETURN (WITH RECURSIVE s(subject, n) AS (
        (SELECT q.subject, 1
         FROM tasklane.task_queue q
         WHERE q.task_type = p_task_type AND q.priority = p_priority AND q.app = p_app
           AND q.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
         ORDER BY q.subject DESC, q.turn DESC
         LIMIT 1)
        UNION ALL
        SELECT (SELECT q.subject
                FROM tasklane.task_queue q
                WHERE q.task_type = p_task_type AND q.priority = p_priority AND q.app = p_app
                  AND q.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
                  AND q.subject < s.subject
                ORDER BY q.subject DESC, q.turn DESC
                LIMIT 1),
               s.n + 1
        FROM s
        WHERE s.subject IS NOT NULL AND s.n < p_cap
    )
    SELECT count(subject)::integer FROM s);
END
$$;

COMMENT ON FUNCTION tasklane.active_subjects(text, smallint, text, integer) IS
$$The number of usage subjects ('' counts as one) of app p_app with claimable tasks of
type p_task_type at priority p_priority, counted up to p_cap, by a skip scan of
task_queue_turns (one probe per subject). Called by tasklane.take_turns.$$;

CREATE FUNCTION tasklane.take_turns(p_id uuid[], p_task_type text[], p_priority smallint[],
                                    p_app text[], p_subject text[])
RETURNS TABLE (id uuid, turn double precision)
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

COMMENT ON FUNCTION tasklane.take_turns(uuid[], text[], smallint[], text[], text[]) IS
$$The turns of tasks becoming claimable (parallel arrays: id, task type, priority, app,
usage subject with '' for none), by start-time fair queueing over the usage subjects of
each task type and priority: a subject's next task takes its turn one step after the
subject's last claimable task, and no earlier than where the claims have got
(tasklane.turn_points, or the lowest claimable turn when no claim has recorded one). The
step of an app's subjects is the number of its subjects with claimable tasks (counted
up to 100, this statement's new ones included) divided by the app's weight
(tasklane.app_weights, default 1): each app's subjects share its turns, and apps share
the claims by weight. Several tasks of one subject in one statement take consecutive
turns in id order. Reads only; called by the mirror's triggers.$$;

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
finished, each claimable one with its turn (tasklane.take_turns). The mirror is the
narrow table the claim scans, so the queue's indexes stay small whatever tasks holds.$$;

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
    -- the others keep theirs.
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
         scope_id, privacy, resource, subject, turn)
    SELECT n.id, n.state, n.priority, n.run_at, n.deadline_at, n.lease_expires_at,
           n.task_type, n.app, n.scope_id, n.privacy, n.resource,
           coalesce(n.usage_subject, ''),
           -- The row to insert carries the turn it keeps, since its CHECK is tested
           -- before the conflict is found.
           coalesce(t.turn, o.turn)
    FROM fresh n
    LEFT JOIN tasklane.task_queue o ON o.id = n.id
    LEFT JOIN tasklane.take_turns(ids, types, priorities, apps, subjects) t ON t.id = n.id
    WHERE n.state NOT IN ('succeeded', 'failed', 'cancelled')
      AND (o.id IS NULL
           OR (o.state, o.priority, o.run_at, o.deadline_at, o.lease_expires_at)
              IS DISTINCT FROM
              (n.state, n.priority, n.run_at, n.deadline_at, n.lease_expires_at))
    ON CONFLICT (id) DO UPDATE
    SET state = excluded.state, priority = excluded.priority, run_at = excluded.run_at,
        deadline_at = excluded.deadline_at, lease_expires_at = excluded.lease_expires_at,
        turn = excluded.turn;
    RETURN NULL;
END
$$;

COMMENT ON FUNCTION tasklane.sync_task_queue() IS
$$Trigger function of tasks_queue_update (AFTER UPDATE ON tasklane.tasks, per statement):
keeps the mirror tasklane.task_queue in step with the updated tasks. Finished tasks
leave it, and when any webhook endpoint is enabled their notifications are written to
webhook_deliveries with one NOTIFY tasklane_webhooks for the statement; other tasks are
upserted only when a mirrored column changed, and those becoming claimable take a turn
(tasklane.take_turns). A statement that wrote its own tasks' mirror rows and
notifications (the claim, the group commit) sets tasklane.queue_written to on; the
trigger then only clears it, so the next statement of the transaction is synced again.
Locks: the mirror rows it writes.$$;
