-- V56: the claims' floors (tasklane.turn_floors) are read from the top of an index on the
-- floor, as where the claims have got is since V54. Forward-only: never edit once
-- landed.
--
-- One row a task type and priority, found by its primary key and raised in place by
-- the floor keeper, a few times a second. Under a held snapshot every raise leaves a
-- version and a read by the key visits all of them; every writer of claimable rows
-- reads the floor by key (tasklane.hold_floors, the mirror's trigger,
-- tasklane.take_turns) and every claim reads its types' floors. In the soak (1,000
-- tasks/s, a REPEATABLE READ transaction held for 10 minutes, V54 and V55 in) the
-- floors' heap pages a task rose from 2.3 before the hold to 12.6 and 31.1 in its two
-- halves.
--
-- The primary key gives way to an index on (task type, priority, floor), and every
-- reader takes the highest floor of its type and priority (a raise only moves it up,
-- so the first visible entry from the top is the current version); the keeper's raise
-- updates the row by its address. Uniqueness stays, through an index on expressions of
-- the two columns that no reader's condition matches, so no plan reads the versions
-- through it; only a raise's uniqueness check does (the keeper's, a few a second). The
-- claim enumerates a type's priorities through tasklane.floors_of, one probe a
-- priority from the top. A previous release's claim statement still works on the table
-- as it is now (it reads the type's rows through the new index).

ALTER TABLE tasklane.turn_floors DROP CONSTRAINT turn_floors_pkey;
CREATE UNIQUE INDEX turn_floors_key ON tasklane.turn_floors ((task_type || ''), (priority + 0));
CREATE INDEX turn_floors_top ON tasklane.turn_floors (task_type, priority, floor);

CREATE FUNCTION tasklane.floors_of(p_task_type text)
RETURNS TABLE(priority smallint, floor double precision)
LANGUAGE plpgsql STABLE
ROWS 1
SET enable_seqscan TO 'off'
SET enable_bitmapscan TO 'off'
SET jit TO 'off'
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

COMMENT ON FUNCTION tasklane.floors_of(text) IS
$$The claims' floors of task type p_task_type: each priority that has one, highest
first, with its floor. One probe a priority from the top of turn_floors_top, so none
visits the versions of a floor a held snapshot keeps. Called by the claim statement
(sql/claim.sql) for each task type it serves.$$;

COMMENT ON TABLE tasklane.turn_floors IS
'Where the claims of each task type and priority start reading the claimable index: every
claimable mirror row below it is marked behind (task_queue_behind). One row for every task
type and priority that has had a claimable task (written by tasklane.hold_floors); raised
by the maintenance role to the turn point. Read from the top of turn_floors_top (ORDER BY
floor DESC LIMIT 1; a type''s priorities through tasklane.floors_of) and raised by the
row''s address, so no read visits the versions a held snapshot keeps; turn_floors_key
keeps one row a type and priority.';

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
    LEFT JOIN LATERAL (SELECT f.floor FROM tasklane.turn_floors f
                       WHERE f.task_type = n.task_type AND f.priority = n.priority
                       ORDER BY f.floor DESC
                       LIMIT 1) f ON true
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

CREATE OR REPLACE FUNCTION tasklane.raise_floors(p_task_type text[], p_priority smallint[], p_target double precision[]) RETURNS TABLE(raised bigint, marked bigint)
    LANGUAGE plpgsql
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_sort TO 'off'
    SET jit TO 'off'
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

CREATE OR REPLACE FUNCTION tasklane.hold_floors(p_task_type text[], p_priority smallint[]) RETURNS void
    LANGUAGE plpgsql
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
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

CREATE OR REPLACE FUNCTION tasklane.claim_local(p_task_types text[], p_worker_id text, p_limit bigint, p_replica_id uuid, p_app text, p_scope_id text) RETURNS TABLE(id uuid, app text, scope_id text, task_type text, attempt integer, max_attempts integer, lease_token uuid, lease_expires_at timestamp with time zone, lease_seconds integer, attempt_timeout_seconds integer, input jsonb, snapshot jsonb, deadline_at timestamp with time zone, privacy text, claimable_at timestamp with time zone, traceparent text, attempt_deadline_at timestamp with time zone)
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_bitmapscan TO 'off'
    SET jit TO 'off'
    AS $claim$
#variable_conflict use_column
BEGIN
    RETURN QUERY
-- transition: Claim
--   except waiting_for_external_fallback
--   (local route: a task that fell back waits for an external worker)
-- Claims up to $3 tasks for a local worker: queued and retrying tasks of any privacy.
-- One statement: the SKIP LOCKED selection sits in a CTE so LIMIT bounds what is
-- updated. Candidates come from the narrow mirror tasklane.task_queue (it holds only
-- live tasks and carries the queue's indexes), the locks from the tasks rows. Each
-- claim gets a fresh random lease token (one for the statement's tasks), counts an
-- attempt, starts its clock (attempt_started_at, attempt_deadline_at) and writes its
-- task.running event. Rendered from sql/claim.sql: the local, aware variant.
-- It writes the claimed tasks' mirror rows itself (the `mirrored` CTE) and sets the
-- transaction's tasklane.queue_written, so the mirror's update trigger skips it.
-- $1 task_types text[], $2 worker_id, $3 limit, $4 replica_id (nullable: remote worker),
-- $5 app, $6 scope_id (each nullable: any; remote workers claim only their token's tasks).
-- Tasks of a paused type (tasklane.paused_task_types) are left queued: the paused types
-- are taken out of $1 first, which keeps the plan an index scan in claim order (a NOT
-- EXISTS on each task would make it a scan and sort of the whole backlog).
-- Claim order is priority (higher first), then turn: the mirror row's turn, which a
-- task takes when it becomes claimable (tasklane.take_turns: start-time fair queueing
-- over apps by weight and, within an app, over its usage subjects), so a tenant's
-- backlog is interleaved with every other tenant's work instead of going first because
-- it is older. Turns of different task types are counted apart: the types' scans are
-- merged by each one's distance from its own first turn in this claim (a turn about,
-- the older first at the same distance).
-- Each claim raises tasklane.turn_points, where the claims have got, to the highest turn
-- it took (tasklane.raise_points: an unlogged row, skipped when another claim holds it;
-- the first claim of a type and priority creates it under a transaction advisory lock
-- it only tries).
-- The local and external variants read each served type's claimable index per priority
-- from its floor (tasklane.turn_floors), plus the tasks behind the floors
-- (task_queue_behind) and, external ones, the waiting fallbacks (task_queue_fallback),
-- so they never walk the index entries of the tasks claimed before the floor last rose,
-- which a held snapshot keeps from vacuum for as long as it lasts (see the scans below).
-- One ordered scan per served type (the claimable and fallback indexes lead with
-- task_type), each locking up to $3 of its tasks, merged in claim order and cut to $3:
-- one scan in priority order over every type would walk the whole backlog of the types
-- this claimer does not run before reaching its own, so a claim beside a large backlog
-- of another type would cost many times a claim by type. Rows locked by a type's scan
-- beyond the merged $3 are let go when the claim commits (it runs alone): a claimer
-- serving several types with backlogs locks up to $3 per type for that instant, and
-- another claimer that finds only those rows comes back short and waits for its next
-- wake-up or poll; the claimer that locked them came back full and claims again at once.
-- Tasks of an app under an emergency stop (tasklane.emergency_stops) are left waiting
-- too, queued and retrying ones alike (a new attempt is new work); a global stop (app
-- '') holds every task: both are init plans as well, the global one a one-time filter
-- (nothing is scanned) and the stopped apps one array read once per claim. The array
-- test is written `NOT (ARRAY[app] <@ ...)` on purpose: `app <> ALL (...)` is
-- estimated from app's statistics, which for a one-app backlog say no task passes, and
-- the claim would plan as a scan and sort of the whole backlog again.
-- Resource slots: a task whose type names a configured resource is claimed
-- only with a free slot of it, taken in this statement (so a resource's cluster-wide
-- limit always holds); tasks without one pay only for an empty-table probe. A resource
-- with retired slots (lowered below what runs) hands out none until they are gone; a
-- resource with no row in tasklane.resources is unlimited.
-- Locks: up to $3 rows per served type (local: per served type and priority, and $3
-- behind), of which up to $3 are claimed (the rest are let go at commit), and up to $3
-- free slots (FOR UPDATE SKIP LOCKED: never waits on
-- another claimer), and the turn_points rows of the claimed types and priorities
-- (SKIP LOCKED).
WITH slots AS (
    SELECT s.resource, s.slot
    FROM tasklane.resource_slots s
    WHERE s.task_id IS NULL
      AND NOT EXISTS (SELECT 1 FROM tasklane.resource_slots r WHERE r.resource = s.resource AND r.retired)
      AND EXISTS (SELECT 1 FROM tasklane.task_queue q
                  WHERE q.resource = s.resource AND q.state IN ('queued', 'waiting_for_retry')
                    AND q.task_type = ANY (ARRAY(SELECT ty.name FROM (SELECT DISTINCT u.name FROM unnest($1::text[]) AS u(name) WHERE NOT EXISTS (SELECT 1 FROM tasklane.paused_task_types p WHERE p.task_type = u.name)) ty)) AND q.run_at <= now()
                    AND ($5::text IS NULL OR q.app = $5) AND ($6::text IS NULL OR q.scope_id = $6)
                    AND NOT EXISTS (SELECT 1 FROM tasklane.emergency_stops e WHERE e.app = '')
                    AND NOT (ARRAY[q.app] <@ ARRAY(SELECT e.app FROM tasklane.emergency_stops e))
                 )
    LIMIT $3
    FOR UPDATE OF s SKIP LOCKED
), picked AS (
    SELECT c.id, c.resource, c.priority, c.run_at, c.task_type, c.turn,
           c.turn - min(c.turn) OVER (PARTITION BY c.task_type, c.priority) AS rel
    FROM (SELECT DISTINCT u.name FROM unnest($1::text[]) AS u(name) WHERE NOT EXISTS (SELECT 1 FROM tasklane.paused_task_types p WHERE p.task_type = u.name)) ty
    CROSS JOIN LATERAL (
    -- Each priority of the type from its floor up (tasklane.turn_floors): the entries
    -- below it are those of the tasks the claims have passed, dead once claimed, which
    -- a held snapshot keeps in the index for as long as it lasts. Every claimable task
    -- below a floor is marked behind (the maintenance role's floor keeper moves it,
    -- sql/floors_raise.sql), and the behind ones are read whole, from their own index.
    -- Each scan locks up to $3; the type's rows are merged below.
    -- The type's floors come from tasklane.floors_of, which reads each from the top of
    -- its index: by the key a read would visit every version a held snapshot keeps.
    SELECT a.* FROM (
    SELECT x.*
    FROM tasklane.floors_of(ty.name) f
    CROSS JOIN LATERAL (
    SELECT t.id, q.resource, q.priority, q.run_at, q.task_type, q.turn
    FROM tasklane.task_queue q
    JOIN tasklane.tasks t ON t.id = q.id
    WHERE q.state IN ('queued', 'waiting_for_retry') AND NOT q.behind
      AND q.priority = f.priority AND q.turn >= f.floor
      AND q.run_at <= now()
      AND q.task_type = ty.name
      AND ($5::text IS NULL OR q.app = $5)
      AND ($6::text IS NULL OR q.scope_id = $6)
      AND (q.deadline_at IS NULL OR q.deadline_at > now())
      AND NOT EXISTS (SELECT 1 FROM tasklane.emergency_stops e WHERE e.app = '')
      AND NOT (ARRAY[q.app] <@ ARRAY(SELECT e.app FROM tasklane.emergency_stops e))
      AND (q.resource IS NULL
           OR q.resource IN (SELECT resource FROM slots)
           OR NOT EXISTS (SELECT 1 FROM tasklane.resources r WHERE r.name = q.resource))
      -- The mirror is read as of this statement's snapshot; the task row is the truth,
      -- locked and (when changed since) rechecked on its newest version, so only what
      -- can change after submit is tested again here.
      AND t.state IN ('queued', 'waiting_for_retry')
      AND t.run_at <= now()
    ORDER BY q.turn, q.id
    LIMIT $3
    FOR UPDATE OF t SKIP LOCKED
    ) x
    ) a
    UNION ALL
    SELECT b.* FROM (
    SELECT t.id, q.resource, q.priority, q.run_at, q.task_type, q.turn
    FROM tasklane.task_queue q
    JOIN tasklane.tasks t ON t.id = q.id
    WHERE q.state IN ('queued', 'waiting_for_retry') AND q.behind
      AND q.run_at <= now()
      AND q.task_type = ty.name
      AND ($5::text IS NULL OR q.app = $5)
      AND ($6::text IS NULL OR q.scope_id = $6)
      AND (q.deadline_at IS NULL OR q.deadline_at > now())
      AND NOT EXISTS (SELECT 1 FROM tasklane.emergency_stops e WHERE e.app = '')
      AND NOT (ARRAY[q.app] <@ ARRAY(SELECT e.app FROM tasklane.emergency_stops e))
      AND (q.resource IS NULL
           OR q.resource IN (SELECT resource FROM slots)
           OR NOT EXISTS (SELECT 1 FROM tasklane.resources r WHERE r.name = q.resource))
      -- The mirror is read as of this statement's snapshot; the task row is the truth,
      -- locked and (when changed since) rechecked on its newest version, so only what
      -- can change after submit is tested again here.
      AND t.state IN ('queued', 'waiting_for_retry')
      AND t.run_at <= now()
    ORDER BY q.priority DESC, q.turn, q.id
    LIMIT $3
    FOR UPDATE OF t SKIP LOCKED
    ) b
    ) c
    ORDER BY c.priority DESC, rel, c.run_at, c.id
    LIMIT $3
), granted AS (
    -- The n-th picked task of a resource gets its n-th free slot; the rest wait.
    SELECT p.id, s.resource AS slot_resource, s.slot
    FROM (SELECT id, resource,
                 row_number() OVER (PARTITION BY resource ORDER BY priority DESC, rel, run_at, id) AS n
          FROM picked) p
    LEFT JOIN (SELECT resource, slot, row_number() OVER (PARTITION BY resource ORDER BY slot) AS n
               FROM slots) s ON s.resource = p.resource AND s.n = p.n
    WHERE p.resource IS NULL OR s.slot IS NOT NULL
       OR NOT EXISTS (SELECT 1 FROM tasklane.resources r WHERE r.name = p.resource)
), taken AS (
    UPDATE tasklane.resource_slots rs SET task_id = g.id
    FROM granted g
    WHERE rs.resource = g.slot_resource AND rs.slot = g.slot
), claimed AS (
    -- The claim finds its picked rows again by id (`t.id = ANY (ARRAY(...))` alone, an
    -- index scan of the primary key whatever the estimates; the slot granted to each is
    -- looked up by a subquery, not a join): claims run with generic plans, which take
    -- `LIMIT $3` for a tenth of the claimable backlog, and joined to that many picked
    -- rows the planner hashes a sequential scan of the whole tasks table into every
    -- claim, whose cost then grows with the table, not with the claim. Not both: beside
    -- the join, the array's estimate of 10 rows makes it a nested loop testing every
    -- pair of picked rows, quadratic in the claim's size.
    UPDATE tasklane.tasks t
    SET state = 'running',
        attempt = t.attempt + 1,
        -- One token for the whole claim, drawn once (an init plan): the fence is the
        -- pair (id, lease_token), so one token serves every row, and gen_random_uuid()
        -- for each row would be a per-row cost for nothing.
        lease_token = (SELECT gen_random_uuid()),
        -- The lease never outlives the attempt's deadline (heartbeat.sql keeps it so):
        -- an attempt past it is found by the rescuers' index on lease_expires_at.
        lease_expires_at = now() + least(t.lease_seconds, t.attempt_timeout_seconds) * interval '1 second',
        attempt_started_at = now(),
        attempt_deadline_at = now() + t.attempt_timeout_seconds * interval '1 second',
        worker_id = $2,
        replica_id = $4,
        route = 'local',
        started_at = coalesce(t.started_at, now()),
        phase = NULL,
        progress = CASE WHEN t.snapshot IS NULL THEN NULL ELSE t.progress END,
        resource_slot = (SELECT g.slot FROM granted g WHERE g.id = t.id),
        event_seq = t.event_seq + 1
    WHERE t.id = ANY (ARRAY(SELECT g.id FROM granted g))
    RETURNING t.id, t.app, t.scope_id, t.task_type, t.attempt, t.max_attempts, t.lease_token,
              t.lease_expires_at, t.lease_seconds, t.attempt_timeout_seconds, t.input,
              t.snapshot, t.deadline_at, t.privacy, t.event_seq, t.run_at, t.traceparent,
              t.attempt_deadline_at
), mirrored AS (
    -- The claimed tasks' mirror rows, written here with one primary-key probe each
    -- (tasklane.mirror_claimed): the update trigger would compare each row again and
    -- upsert it. In a function of its own because only there can the plan be kept from
    -- a sequential scan: the mirror holds only live tasks, and under a snapshot held
    -- open its statistics say it has a handful of rows spread over many pages (every
    -- task claimed or finished since the snapshot, which vacuum may not remove), so the
    -- planner reads its whole heap rather than its bloated primary key, at every claim;
    -- sequential scans stay allowed for the claim itself (the external claims need
    -- them). The ids and the leases' ends go as two arrays (one aggregate row).
    SELECT m.written
    FROM (SELECT array_agg(c.id) AS ids, array_agg(c.lease_expires_at) AS ends
          FROM claimed c) a
    CROSS JOIN LATERAL tasklane.mirror_claimed(a.ids, a.ends) m
), written AS (
    -- The setting tells the trigger this statement wrote them; it is set only when a
    -- row was, so only when tasks were updated and the trigger fires to consume it.
    -- Once a statement (the answer joins it): set for each row, it would cost every
    -- row a function call.
    SELECT set_config('tasklane.queue_written', 'on', true) AS written
    WHERE EXISTS (SELECT 1 FROM mirrored m WHERE m.written > 0)
), events AS (
    INSERT INTO tasklane.task_events (task_id, seq, type, data)
    -- A first attempt's data is a constant: building the object is a per-row cost
    -- the common case skips.
    SELECT id, event_seq, 'task.running',
           CASE WHEN attempt = 1 THEN '{"attempt": 1, "route": "local"}'::jsonb
                ELSE jsonb_build_object('attempt', attempt, 'route', 'local') END
    FROM claimed
), reached AS (
    -- The highest turn claimed of each task type and priority: where the claims have got.
    SELECT k.task_type, k.priority, max(k.turn) AS turn
    FROM picked k
    JOIN claimed c ON c.id = k.id
    GROUP BY k.task_type, k.priority
), raised AS (
    -- Raised in a function of its own (tasklane.raise_points: one aggregate row), which
    -- reads each point from the top of its index and writes it by its address: by its
    -- key, a read would visit every version of the row a held snapshot keeps.
    SELECT tasklane.raise_points(array_agg(r.task_type), array_agg(r.priority),
                                 array_agg(r.turn)) AS raised
    FROM reached r
)
SELECT c.id, c.app, c.scope_id, c.task_type, c.attempt, c.max_attempts, c.lease_token,
       c.lease_expires_at, c.lease_seconds, c.attempt_timeout_seconds, c.input, c.snapshot,
       c.deadline_at, c.privacy, c.run_at AS claimable_at, c.traceparent,
       c.attempt_deadline_at
FROM claimed c
JOIN picked k ON k.id = c.id
LEFT JOIN written ON true
LEFT JOIN raised ON true
-- In claim order, as the worker protocol promises (an UPDATE returns its rows in the
-- order its plan met them).
ORDER BY k.priority DESC, k.rel, k.run_at, k.id;
END
$claim$;

CREATE OR REPLACE FUNCTION tasklane.claim_local_plain(p_task_types text[], p_worker_id text, p_limit bigint, p_replica_id uuid, p_app text, p_scope_id text) RETURNS TABLE(id uuid, app text, scope_id text, task_type text, attempt integer, max_attempts integer, lease_token uuid, lease_expires_at timestamp with time zone, lease_seconds integer, attempt_timeout_seconds integer, input jsonb, snapshot jsonb, deadline_at timestamp with time zone, privacy text, claimable_at timestamp with time zone, traceparent text, attempt_deadline_at timestamp with time zone)
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_bitmapscan TO 'off'
    SET jit TO 'off'
    AS $claim$
#variable_conflict use_column
BEGIN
    RETURN QUERY
-- transition: Claim
--   except waiting_for_external_fallback
--   (local route: a task that fell back waits for an external worker)
-- Claims up to $3 tasks for a local worker: queued and retrying tasks of any privacy.
-- One statement: the SKIP LOCKED selection sits in a CTE so LIMIT bounds what is
-- updated. Candidates come from the narrow mirror tasklane.task_queue (it holds only
-- live tasks and carries the queue's indexes), the locks from the tasks rows. Each
-- claim gets a fresh random lease token (one for the statement's tasks), counts an
-- attempt, starts its clock (attempt_started_at, attempt_deadline_at) and writes its
-- task.running event. Rendered from sql/claim.sql: the local, plain variant.
-- It writes the claimed tasks' mirror rows itself (the `mirrored` CTE) and sets the
-- transaction's tasklane.queue_written, so the mirror's update trigger skips it.
-- $1 task_types text[], $2 worker_id, $3 limit, $4 replica_id (nullable: remote worker),
-- $5 app, $6 scope_id (each nullable: any; remote workers claim only their token's tasks).
-- Tasks of a paused type (tasklane.paused_task_types) are left queued: the paused types
-- are taken out of $1 first, which keeps the plan an index scan in claim order (a NOT
-- EXISTS on each task would make it a scan and sort of the whole backlog).
-- Claim order is priority (higher first), then turn: the mirror row's turn, which a
-- task takes when it becomes claimable (tasklane.take_turns: start-time fair queueing
-- over apps by weight and, within an app, over its usage subjects), so a tenant's
-- backlog is interleaved with every other tenant's work instead of going first because
-- it is older. Turns of different task types are counted apart: the types' scans are
-- merged by each one's distance from its own first turn in this claim (a turn about,
-- the older first at the same distance).
-- Each claim raises tasklane.turn_points, where the claims have got, to the highest turn
-- it took (tasklane.raise_points: an unlogged row, skipped when another claim holds it;
-- the first claim of a type and priority creates it under a transaction advisory lock
-- it only tries).
-- The local and external variants read each served type's claimable index per priority
-- from its floor (tasklane.turn_floors), plus the tasks behind the floors
-- (task_queue_behind) and, external ones, the waiting fallbacks (task_queue_fallback),
-- so they never walk the index entries of the tasks claimed before the floor last rose,
-- which a held snapshot keeps from vacuum for as long as it lasts (see the scans below).
-- One ordered scan per served type (the claimable and fallback indexes lead with
-- task_type), each locking up to $3 of its tasks, merged in claim order and cut to $3:
-- one scan in priority order over every type would walk the whole backlog of the types
-- this claimer does not run before reaching its own, so a claim beside a large backlog
-- of another type would cost many times a claim by type. Rows locked by a type's scan
-- beyond the merged $3 are let go when the claim commits (it runs alone): a claimer
-- serving several types with backlogs locks up to $3 per type for that instant, and
-- another claimer that finds only those rows comes back short and waits for its next
-- wake-up or poll; the claimer that locked them came back full and claims again at once.
-- Tasks of an app under an emergency stop (tasklane.emergency_stops) are left waiting
-- too, queued and retrying ones alike (a new attempt is new work); a global stop (app
-- '') holds every task: both are init plans as well, the global one a one-time filter
-- (nothing is scanned) and the stopped apps one array read once per claim. The array
-- test is written `NOT (ARRAY[app] <@ ...)` on purpose: `app <> ALL (...)` is
-- estimated from app's statistics, which for a one-app backlog say no task passes, and
-- the claim would plan as a scan and sort of the whole backlog again.
-- The variant for claimers none of whose task types names a resource: tasks holding a
-- resource are left to resource-aware claimers, so this stays as cheap as a claim
-- without resources.
-- Locks: up to $3 rows per served type (local: per served type and priority, and $3
-- behind), of which up to $3 are claimed (the rest are let go at commit), and the
-- turn_points rows of the claimed types and priorities (FOR
-- UPDATE SKIP LOCKED: never waits on another claimer).
WITH picked AS (
    SELECT c.id, c.priority, c.run_at, c.task_type, c.turn,
           c.turn - min(c.turn) OVER (PARTITION BY c.task_type, c.priority) AS rel
    FROM (SELECT DISTINCT u.name FROM unnest($1::text[]) AS u(name) WHERE NOT EXISTS (SELECT 1 FROM tasklane.paused_task_types p WHERE p.task_type = u.name)) ty
    CROSS JOIN LATERAL (
    -- Each priority of the type from its floor up (tasklane.turn_floors): the entries
    -- below it are those of the tasks the claims have passed, dead once claimed, which
    -- a held snapshot keeps in the index for as long as it lasts. Every claimable task
    -- below a floor is marked behind (the maintenance role's floor keeper moves it,
    -- sql/floors_raise.sql), and the behind ones are read whole, from their own index.
    -- Each scan locks up to $3; the type's rows are merged below.
    -- The type's floors come from tasklane.floors_of, which reads each from the top of
    -- its index: by the key a read would visit every version a held snapshot keeps.
    SELECT a.* FROM (
    SELECT x.*
    FROM tasklane.floors_of(ty.name) f
    CROSS JOIN LATERAL (
    SELECT t.id, q.resource, q.priority, q.run_at, q.task_type, q.turn
    FROM tasklane.task_queue q
    JOIN tasklane.tasks t ON t.id = q.id
    WHERE q.state IN ('queued', 'waiting_for_retry') AND NOT q.behind
      AND q.priority = f.priority AND q.turn >= f.floor
      AND q.run_at <= now()
      AND q.task_type = ty.name
      AND ($5::text IS NULL OR q.app = $5)
      AND ($6::text IS NULL OR q.scope_id = $6)
      AND (q.deadline_at IS NULL OR q.deadline_at > now())
      AND NOT EXISTS (SELECT 1 FROM tasklane.emergency_stops e WHERE e.app = '')
      AND NOT (ARRAY[q.app] <@ ARRAY(SELECT e.app FROM tasklane.emergency_stops e))
      AND q.resource IS NULL
      -- The mirror is read as of this statement's snapshot; the task row is the truth,
      -- locked and (when changed since) rechecked on its newest version, so only what
      -- can change after submit is tested again here.
      AND t.state IN ('queued', 'waiting_for_retry')
      AND t.run_at <= now()
    ORDER BY q.turn, q.id
    LIMIT $3
    FOR UPDATE OF t SKIP LOCKED
    ) x
    ) a
    UNION ALL
    SELECT b.* FROM (
    SELECT t.id, q.resource, q.priority, q.run_at, q.task_type, q.turn
    FROM tasklane.task_queue q
    JOIN tasklane.tasks t ON t.id = q.id
    WHERE q.state IN ('queued', 'waiting_for_retry') AND q.behind
      AND q.run_at <= now()
      AND q.task_type = ty.name
      AND ($5::text IS NULL OR q.app = $5)
      AND ($6::text IS NULL OR q.scope_id = $6)
      AND (q.deadline_at IS NULL OR q.deadline_at > now())
      AND NOT EXISTS (SELECT 1 FROM tasklane.emergency_stops e WHERE e.app = '')
      AND NOT (ARRAY[q.app] <@ ARRAY(SELECT e.app FROM tasklane.emergency_stops e))
      AND q.resource IS NULL
      -- The mirror is read as of this statement's snapshot; the task row is the truth,
      -- locked and (when changed since) rechecked on its newest version, so only what
      -- can change after submit is tested again here.
      AND t.state IN ('queued', 'waiting_for_retry')
      AND t.run_at <= now()
    ORDER BY q.priority DESC, q.turn, q.id
    LIMIT $3
    FOR UPDATE OF t SKIP LOCKED
    ) b
    ) c
    ORDER BY c.priority DESC, rel, c.run_at, c.id
    LIMIT $3
), claimed AS (
    -- The claim finds its picked rows again by id (`t.id = ANY (ARRAY(...))` alone, an
    -- index scan of the primary key whatever the estimates; the slot granted to each is
    -- looked up by a subquery, not a join): claims run with generic plans, which take
    -- `LIMIT $3` for a tenth of the claimable backlog, and joined to that many picked
    -- rows the planner hashes a sequential scan of the whole tasks table into every
    -- claim, whose cost then grows with the table, not with the claim. Not both: beside
    -- the join, the array's estimate of 10 rows makes it a nested loop testing every
    -- pair of picked rows, quadratic in the claim's size.
    UPDATE tasklane.tasks t
    SET state = 'running',
        attempt = t.attempt + 1,
        -- One token for the whole claim, drawn once (an init plan): the fence is the
        -- pair (id, lease_token), so one token serves every row, and gen_random_uuid()
        -- for each row would be a per-row cost for nothing.
        lease_token = (SELECT gen_random_uuid()),
        -- The lease never outlives the attempt's deadline (heartbeat.sql keeps it so):
        -- an attempt past it is found by the rescuers' index on lease_expires_at.
        lease_expires_at = now() + least(t.lease_seconds, t.attempt_timeout_seconds) * interval '1 second',
        attempt_started_at = now(),
        attempt_deadline_at = now() + t.attempt_timeout_seconds * interval '1 second',
        worker_id = $2,
        replica_id = $4,
        route = 'local',
        started_at = coalesce(t.started_at, now()),
        phase = NULL,
        progress = CASE WHEN t.snapshot IS NULL THEN NULL ELSE t.progress END,
        event_seq = t.event_seq + 1
    WHERE t.id = ANY (ARRAY(SELECT p.id FROM picked p))
    RETURNING t.id, t.app, t.scope_id, t.task_type, t.attempt, t.max_attempts, t.lease_token,
              t.lease_expires_at, t.lease_seconds, t.attempt_timeout_seconds, t.input,
              t.snapshot, t.deadline_at, t.privacy, t.event_seq, t.run_at, t.traceparent,
              t.attempt_deadline_at
), mirrored AS (
    -- The claimed tasks' mirror rows, written here with one primary-key probe each
    -- (tasklane.mirror_claimed): the update trigger would compare each row again and
    -- upsert it. In a function of its own because only there can the plan be kept from
    -- a sequential scan: the mirror holds only live tasks, and under a snapshot held
    -- open its statistics say it has a handful of rows spread over many pages (every
    -- task claimed or finished since the snapshot, which vacuum may not remove), so the
    -- planner reads its whole heap rather than its bloated primary key, at every claim;
    -- sequential scans stay allowed for the claim itself (the external claims need
    -- them). The ids and the leases' ends go as two arrays (one aggregate row).
    SELECT m.written
    FROM (SELECT array_agg(c.id) AS ids, array_agg(c.lease_expires_at) AS ends
          FROM claimed c) a
    CROSS JOIN LATERAL tasklane.mirror_claimed(a.ids, a.ends) m
), written AS (
    -- The setting tells the trigger this statement wrote them; it is set only when a
    -- row was, so only when tasks were updated and the trigger fires to consume it.
    -- Once a statement (the answer joins it): set for each row, it would cost every
    -- row a function call.
    SELECT set_config('tasklane.queue_written', 'on', true) AS written
    WHERE EXISTS (SELECT 1 FROM mirrored m WHERE m.written > 0)
), events AS (
    INSERT INTO tasklane.task_events (task_id, seq, type, data)
    -- A first attempt's data is a constant: building the object is a per-row cost
    -- the common case skips.
    SELECT id, event_seq, 'task.running',
           CASE WHEN attempt = 1 THEN '{"attempt": 1, "route": "local"}'::jsonb
                ELSE jsonb_build_object('attempt', attempt, 'route', 'local') END
    FROM claimed
), reached AS (
    -- The highest turn claimed of each task type and priority: where the claims have got.
    SELECT k.task_type, k.priority, max(k.turn) AS turn
    FROM picked k
    JOIN claimed c ON c.id = k.id
    GROUP BY k.task_type, k.priority
), raised AS (
    -- Raised in a function of its own (tasklane.raise_points: one aggregate row), which
    -- reads each point from the top of its index and writes it by its address: by its
    -- key, a read would visit every version of the row a held snapshot keeps.
    SELECT tasklane.raise_points(array_agg(r.task_type), array_agg(r.priority),
                                 array_agg(r.turn)) AS raised
    FROM reached r
)
SELECT c.id, c.app, c.scope_id, c.task_type, c.attempt, c.max_attempts, c.lease_token,
       c.lease_expires_at, c.lease_seconds, c.attempt_timeout_seconds, c.input, c.snapshot,
       c.deadline_at, c.privacy, c.run_at AS claimable_at, c.traceparent,
       c.attempt_deadline_at
FROM claimed c
JOIN picked k ON k.id = c.id
LEFT JOIN written ON true
LEFT JOIN raised ON true
-- In claim order, as the worker protocol promises (an UPDATE returns its rows in the
-- order its plan met them).
ORDER BY k.priority DESC, k.rel, k.run_at, k.id;
END
$claim$;

CREATE OR REPLACE FUNCTION tasklane.claim_external(p_task_types text[], p_worker_id text, p_limit bigint, p_replica_id uuid, p_app text, p_scope_id text) RETURNS TABLE(id uuid, app text, scope_id text, task_type text, attempt integer, max_attempts integer, lease_token uuid, lease_expires_at timestamp with time zone, lease_seconds integer, attempt_timeout_seconds integer, input jsonb, snapshot jsonb, deadline_at timestamp with time zone, privacy text, claimable_at timestamp with time zone, traceparent text, attempt_deadline_at timestamp with time zone)
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_bitmapscan TO 'off'
    SET jit TO 'off'
    AS $claim$
#variable_conflict use_column
BEGIN
    RETURN QUERY
-- transition: Claim
-- Claims up to $3 tasks for an external worker: only tasks whose privacy is
-- external_allowed, including those waiting for an external fallback.
-- One statement: the SKIP LOCKED selection sits in a CTE so LIMIT bounds what is
-- updated. Candidates come from the narrow mirror tasklane.task_queue (it holds only
-- live tasks and carries the queue's indexes), the locks from the tasks rows. Each
-- claim gets a fresh random lease token (one for the statement's tasks), counts an
-- attempt, starts its clock (attempt_started_at, attempt_deadline_at) and writes its
-- task.running event. Rendered from sql/claim.sql: the external, aware variant.
-- It writes the claimed tasks' mirror rows itself (the `mirrored` CTE) and sets the
-- transaction's tasklane.queue_written, so the mirror's update trigger skips it.
-- $1 task_types text[], $2 worker_id, $3 limit, $4 replica_id (nullable: remote worker),
-- $5 app, $6 scope_id (each nullable: any; remote workers claim only their token's tasks).
-- Tasks of a paused type (tasklane.paused_task_types) are left queued: the paused types
-- are taken out of $1 first, which keeps the plan an index scan in claim order (a NOT
-- EXISTS on each task would make it a scan and sort of the whole backlog).
-- Claim order is priority (higher first), then turn: the mirror row's turn, which a
-- task takes when it becomes claimable (tasklane.take_turns: start-time fair queueing
-- over apps by weight and, within an app, over its usage subjects), so a tenant's
-- backlog is interleaved with every other tenant's work instead of going first because
-- it is older. Turns of different task types are counted apart: the types' scans are
-- merged by each one's distance from its own first turn in this claim (a turn about,
-- the older first at the same distance).
-- Each claim raises tasklane.turn_points, where the claims have got, to the highest turn
-- it took (tasklane.raise_points: an unlogged row, skipped when another claim holds it;
-- the first claim of a type and priority creates it under a transaction advisory lock
-- it only tries).
-- The local and external variants read each served type's claimable index per priority
-- from its floor (tasklane.turn_floors), plus the tasks behind the floors
-- (task_queue_behind) and, external ones, the waiting fallbacks (task_queue_fallback),
-- so they never walk the index entries of the tasks claimed before the floor last rose,
-- which a held snapshot keeps from vacuum for as long as it lasts (see the scans below).
-- One ordered scan per served type (the claimable and fallback indexes lead with
-- task_type), each locking up to $3 of its tasks, merged in claim order and cut to $3:
-- one scan in priority order over every type would walk the whole backlog of the types
-- this claimer does not run before reaching its own, so a claim beside a large backlog
-- of another type would cost many times a claim by type. Rows locked by a type's scan
-- beyond the merged $3 are let go when the claim commits (it runs alone): a claimer
-- serving several types with backlogs locks up to $3 per type for that instant, and
-- another claimer that finds only those rows comes back short and waits for its next
-- wake-up or poll; the claimer that locked them came back full and claims again at once.
-- Tasks of an app under an emergency stop (tasklane.emergency_stops) are left waiting
-- too, queued and retrying ones alike (a new attempt is new work); a global stop (app
-- '') holds every task: both are init plans as well, the global one a one-time filter
-- (nothing is scanned) and the stopped apps one array read once per claim. The array
-- test is written `NOT (ARRAY[app] <@ ...)` on purpose: `app <> ALL (...)` is
-- estimated from app's statistics, which for a one-app backlog say no task passes, and
-- the claim would plan as a scan and sort of the whole backlog again.
-- Resource slots: a task whose type names a configured resource is claimed
-- only with a free slot of it, taken in this statement (so a resource's cluster-wide
-- limit always holds); tasks without one pay only for an empty-table probe. A resource
-- with retired slots (lowered below what runs) hands out none until they are gone; a
-- resource with no row in tasklane.resources is unlimited.
-- Locks: up to $3 rows per served type (local: per served type and priority, and $3
-- behind), of which up to $3 are claimed (the rest are let go at commit), and up to $3
-- free slots (FOR UPDATE SKIP LOCKED: never waits on
-- another claimer), and the turn_points rows of the claimed types and priorities
-- (SKIP LOCKED).
WITH slots AS (
    SELECT s.resource, s.slot
    FROM tasklane.resource_slots s
    WHERE s.task_id IS NULL
      AND NOT EXISTS (SELECT 1 FROM tasklane.resource_slots r WHERE r.resource = s.resource AND r.retired)
      AND EXISTS (SELECT 1 FROM tasklane.task_queue q
                  WHERE q.resource = s.resource AND q.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
                    AND q.task_type = ANY (ARRAY(SELECT ty.name FROM (SELECT DISTINCT u.name FROM unnest($1::text[]) AS u(name) WHERE NOT EXISTS (SELECT 1 FROM tasklane.paused_task_types p WHERE p.task_type = u.name)) ty)) AND q.run_at <= now()
                    AND ($5::text IS NULL OR q.app = $5) AND ($6::text IS NULL OR q.scope_id = $6)
                    AND NOT EXISTS (SELECT 1 FROM tasklane.emergency_stops e WHERE e.app = '')
                    AND NOT (ARRAY[q.app] <@ ARRAY(SELECT e.app FROM tasklane.emergency_stops e))
                    AND q.privacy = 'external_allowed'
                 )
    LIMIT $3
    FOR UPDATE OF s SKIP LOCKED
), picked AS (
    SELECT c.id, c.resource, c.priority, c.run_at, c.task_type, c.turn,
           c.turn - min(c.turn) OVER (PARTITION BY c.task_type, c.priority) AS rel
    FROM (SELECT DISTINCT u.name FROM unnest($1::text[]) AS u(name) WHERE NOT EXISTS (SELECT 1 FROM tasklane.paused_task_types p WHERE p.task_type = u.name)) ty
    CROSS JOIN LATERAL (
    -- Each priority of the type from its floor up (tasklane.turn_floors): the entries
    -- below it are those of the tasks the claims have passed, dead once claimed, which
    -- a held snapshot keeps in the index for as long as it lasts. Every claimable task
    -- below a floor is marked behind (the maintenance role's floor keeper moves it,
    -- sql/floors_raise.sql), and the behind ones are read whole, from their own index.
    -- Each scan locks up to $3; the type's rows are merged below.
    -- The type's floors come from tasklane.floors_of, which reads each from the top of
    -- its index: by the key a read would visit every version a held snapshot keeps.
    SELECT a.* FROM (
    SELECT x.*
    FROM tasklane.floors_of(ty.name) f
    CROSS JOIN LATERAL (
    SELECT t.id, q.resource, q.priority, q.run_at, q.task_type, q.turn
    FROM tasklane.task_queue q
    JOIN tasklane.tasks t ON t.id = q.id
    WHERE q.state IN ('queued', 'waiting_for_retry') AND NOT q.behind
      AND q.priority = f.priority AND q.turn >= f.floor
      AND q.run_at <= now()
      AND q.task_type = ty.name
      AND ($5::text IS NULL OR q.app = $5)
      AND ($6::text IS NULL OR q.scope_id = $6)
      AND (q.deadline_at IS NULL OR q.deadline_at > now())
      AND NOT EXISTS (SELECT 1 FROM tasklane.emergency_stops e WHERE e.app = '')
      AND NOT (ARRAY[q.app] <@ ARRAY(SELECT e.app FROM tasklane.emergency_stops e))
      AND q.privacy = 'external_allowed'
      AND (q.resource IS NULL
           OR q.resource IN (SELECT resource FROM slots)
           OR NOT EXISTS (SELECT 1 FROM tasklane.resources r WHERE r.name = q.resource))
      -- The mirror is read as of this statement's snapshot; the task row is the truth,
      -- locked and (when changed since) rechecked on its newest version, so only what
      -- can change after submit is tested again here.
      AND t.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
      AND t.run_at <= now()
    ORDER BY q.turn, q.id
    LIMIT $3
    FOR UPDATE OF t SKIP LOCKED
    ) x
    ) a
    UNION ALL
    SELECT b.* FROM (
    SELECT t.id, q.resource, q.priority, q.run_at, q.task_type, q.turn
    FROM tasklane.task_queue q
    JOIN tasklane.tasks t ON t.id = q.id
    WHERE q.state IN ('queued', 'waiting_for_retry') AND q.behind
      AND q.run_at <= now()
      AND q.task_type = ty.name
      AND ($5::text IS NULL OR q.app = $5)
      AND ($6::text IS NULL OR q.scope_id = $6)
      AND (q.deadline_at IS NULL OR q.deadline_at > now())
      AND NOT EXISTS (SELECT 1 FROM tasklane.emergency_stops e WHERE e.app = '')
      AND NOT (ARRAY[q.app] <@ ARRAY(SELECT e.app FROM tasklane.emergency_stops e))
      AND q.privacy = 'external_allowed'
      AND (q.resource IS NULL
           OR q.resource IN (SELECT resource FROM slots)
           OR NOT EXISTS (SELECT 1 FROM tasklane.resources r WHERE r.name = q.resource))
      -- The mirror is read as of this statement's snapshot; the task row is the truth,
      -- locked and (when changed since) rechecked on its newest version, so only what
      -- can change after submit is tested again here.
      AND t.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
      AND t.run_at <= now()
    ORDER BY q.priority DESC, q.turn, q.id
    LIMIT $3
    FOR UPDATE OF t SKIP LOCKED
    ) b
    -- The waiting fallbacks, from their own index: they keep their turns, and are few.
    UNION ALL
    SELECT w.* FROM (
    SELECT t.id, q.resource, q.priority, q.run_at, q.task_type, q.turn
    FROM tasklane.task_queue q
    JOIN tasklane.tasks t ON t.id = q.id
    WHERE q.state = 'waiting_for_external_fallback'
      AND q.run_at <= now()
      AND q.task_type = ty.name
      AND ($5::text IS NULL OR q.app = $5)
      AND ($6::text IS NULL OR q.scope_id = $6)
      AND (q.deadline_at IS NULL OR q.deadline_at > now())
      AND NOT EXISTS (SELECT 1 FROM tasklane.emergency_stops e WHERE e.app = '')
      AND NOT (ARRAY[q.app] <@ ARRAY(SELECT e.app FROM tasklane.emergency_stops e))
      AND q.privacy = 'external_allowed'
      AND (q.resource IS NULL
           OR q.resource IN (SELECT resource FROM slots)
           OR NOT EXISTS (SELECT 1 FROM tasklane.resources r WHERE r.name = q.resource))
      -- The mirror is read as of this statement's snapshot; the task row is the truth,
      -- locked and (when changed since) rechecked on its newest version, so only what
      -- can change after submit is tested again here.
      AND t.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
      AND t.run_at <= now()
    ORDER BY q.priority DESC, q.turn, q.id
    LIMIT $3
    FOR UPDATE OF t SKIP LOCKED
    ) w
    ) c
    ORDER BY c.priority DESC, rel, c.run_at, c.id
    LIMIT $3
), granted AS (
    -- The n-th picked task of a resource gets its n-th free slot; the rest wait.
    SELECT p.id, s.resource AS slot_resource, s.slot
    FROM (SELECT id, resource,
                 row_number() OVER (PARTITION BY resource ORDER BY priority DESC, rel, run_at, id) AS n
          FROM picked) p
    LEFT JOIN (SELECT resource, slot, row_number() OVER (PARTITION BY resource ORDER BY slot) AS n
               FROM slots) s ON s.resource = p.resource AND s.n = p.n
    WHERE p.resource IS NULL OR s.slot IS NOT NULL
       OR NOT EXISTS (SELECT 1 FROM tasklane.resources r WHERE r.name = p.resource)
), taken AS (
    UPDATE tasklane.resource_slots rs SET task_id = g.id
    FROM granted g
    WHERE rs.resource = g.slot_resource AND rs.slot = g.slot
), claimed AS (
    -- The claim finds its picked rows again by id (`t.id = ANY (ARRAY(...))` alone, an
    -- index scan of the primary key whatever the estimates; the slot granted to each is
    -- looked up by a subquery, not a join): claims run with generic plans, which take
    -- `LIMIT $3` for a tenth of the claimable backlog, and joined to that many picked
    -- rows the planner hashes a sequential scan of the whole tasks table into every
    -- claim, whose cost then grows with the table, not with the claim. Not both: beside
    -- the join, the array's estimate of 10 rows makes it a nested loop testing every
    -- pair of picked rows, quadratic in the claim's size.
    UPDATE tasklane.tasks t
    SET state = 'running',
        attempt = t.attempt + 1,
        -- One token for the whole claim, drawn once (an init plan): the fence is the
        -- pair (id, lease_token), so one token serves every row, and gen_random_uuid()
        -- for each row would be a per-row cost for nothing.
        lease_token = (SELECT gen_random_uuid()),
        -- The lease never outlives the attempt's deadline (heartbeat.sql keeps it so):
        -- an attempt past it is found by the rescuers' index on lease_expires_at.
        lease_expires_at = now() + least(t.lease_seconds, t.attempt_timeout_seconds) * interval '1 second',
        attempt_started_at = now(),
        attempt_deadline_at = now() + t.attempt_timeout_seconds * interval '1 second',
        worker_id = $2,
        replica_id = $4,
        route = 'external',
        started_at = coalesce(t.started_at, now()),
        phase = NULL,
        progress = CASE WHEN t.snapshot IS NULL THEN NULL ELSE t.progress END,
        resource_slot = (SELECT g.slot FROM granted g WHERE g.id = t.id),
        event_seq = t.event_seq + 1
    WHERE t.id = ANY (ARRAY(SELECT g.id FROM granted g))
    RETURNING t.id, t.app, t.scope_id, t.task_type, t.attempt, t.max_attempts, t.lease_token,
              t.lease_expires_at, t.lease_seconds, t.attempt_timeout_seconds, t.input,
              t.snapshot, t.deadline_at, t.privacy, t.event_seq, t.run_at, t.traceparent,
              t.attempt_deadline_at
), mirrored AS (
    -- The claimed tasks' mirror rows, written here with one primary-key probe each
    -- (tasklane.mirror_claimed): the update trigger would compare each row again and
    -- upsert it. In a function of its own because only there can the plan be kept from
    -- a sequential scan: the mirror holds only live tasks, and under a snapshot held
    -- open its statistics say it has a handful of rows spread over many pages (every
    -- task claimed or finished since the snapshot, which vacuum may not remove), so the
    -- planner reads its whole heap rather than its bloated primary key, at every claim;
    -- sequential scans stay allowed for the claim itself (the external claims need
    -- them). The ids and the leases' ends go as two arrays (one aggregate row).
    SELECT m.written
    FROM (SELECT array_agg(c.id) AS ids, array_agg(c.lease_expires_at) AS ends
          FROM claimed c) a
    CROSS JOIN LATERAL tasklane.mirror_claimed(a.ids, a.ends) m
), written AS (
    -- The setting tells the trigger this statement wrote them; it is set only when a
    -- row was, so only when tasks were updated and the trigger fires to consume it.
    -- Once a statement (the answer joins it): set for each row, it would cost every
    -- row a function call.
    SELECT set_config('tasklane.queue_written', 'on', true) AS written
    WHERE EXISTS (SELECT 1 FROM mirrored m WHERE m.written > 0)
), events AS (
    INSERT INTO tasklane.task_events (task_id, seq, type, data)
    -- A first attempt's data is a constant: building the object is a per-row cost
    -- the common case skips.
    SELECT id, event_seq, 'task.running',
           CASE WHEN attempt = 1 THEN '{"attempt": 1, "route": "external"}'::jsonb
                ELSE jsonb_build_object('attempt', attempt, 'route', 'external') END
    FROM claimed
), reached AS (
    -- The highest turn claimed of each task type and priority: where the claims have got.
    SELECT k.task_type, k.priority, max(k.turn) AS turn
    FROM picked k
    JOIN claimed c ON c.id = k.id
    GROUP BY k.task_type, k.priority
), raised AS (
    -- Raised in a function of its own (tasklane.raise_points: one aggregate row), which
    -- reads each point from the top of its index and writes it by its address: by its
    -- key, a read would visit every version of the row a held snapshot keeps.
    SELECT tasklane.raise_points(array_agg(r.task_type), array_agg(r.priority),
                                 array_agg(r.turn)) AS raised
    FROM reached r
)
SELECT c.id, c.app, c.scope_id, c.task_type, c.attempt, c.max_attempts, c.lease_token,
       c.lease_expires_at, c.lease_seconds, c.attempt_timeout_seconds, c.input, c.snapshot,
       c.deadline_at, c.privacy, c.run_at AS claimable_at, c.traceparent,
       c.attempt_deadline_at
FROM claimed c
JOIN picked k ON k.id = c.id
LEFT JOIN written ON true
LEFT JOIN raised ON true
-- In claim order, as the worker protocol promises (an UPDATE returns its rows in the
-- order its plan met them).
ORDER BY k.priority DESC, k.rel, k.run_at, k.id;
END
$claim$;

CREATE OR REPLACE FUNCTION tasklane.claim_external_plain(p_task_types text[], p_worker_id text, p_limit bigint, p_replica_id uuid, p_app text, p_scope_id text) RETURNS TABLE(id uuid, app text, scope_id text, task_type text, attempt integer, max_attempts integer, lease_token uuid, lease_expires_at timestamp with time zone, lease_seconds integer, attempt_timeout_seconds integer, input jsonb, snapshot jsonb, deadline_at timestamp with time zone, privacy text, claimable_at timestamp with time zone, traceparent text, attempt_deadline_at timestamp with time zone)
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_bitmapscan TO 'off'
    SET jit TO 'off'
    AS $claim$
#variable_conflict use_column
BEGIN
    RETURN QUERY
-- transition: Claim
-- Claims up to $3 tasks for an external worker: only tasks whose privacy is
-- external_allowed, including those waiting for an external fallback.
-- One statement: the SKIP LOCKED selection sits in a CTE so LIMIT bounds what is
-- updated. Candidates come from the narrow mirror tasklane.task_queue (it holds only
-- live tasks and carries the queue's indexes), the locks from the tasks rows. Each
-- claim gets a fresh random lease token (one for the statement's tasks), counts an
-- attempt, starts its clock (attempt_started_at, attempt_deadline_at) and writes its
-- task.running event. Rendered from sql/claim.sql: the external, plain variant.
-- It writes the claimed tasks' mirror rows itself (the `mirrored` CTE) and sets the
-- transaction's tasklane.queue_written, so the mirror's update trigger skips it.
-- $1 task_types text[], $2 worker_id, $3 limit, $4 replica_id (nullable: remote worker),
-- $5 app, $6 scope_id (each nullable: any; remote workers claim only their token's tasks).
-- Tasks of a paused type (tasklane.paused_task_types) are left queued: the paused types
-- are taken out of $1 first, which keeps the plan an index scan in claim order (a NOT
-- EXISTS on each task would make it a scan and sort of the whole backlog).
-- Claim order is priority (higher first), then turn: the mirror row's turn, which a
-- task takes when it becomes claimable (tasklane.take_turns: start-time fair queueing
-- over apps by weight and, within an app, over its usage subjects), so a tenant's
-- backlog is interleaved with every other tenant's work instead of going first because
-- it is older. Turns of different task types are counted apart: the types' scans are
-- merged by each one's distance from its own first turn in this claim (a turn about,
-- the older first at the same distance).
-- Each claim raises tasklane.turn_points, where the claims have got, to the highest turn
-- it took (tasklane.raise_points: an unlogged row, skipped when another claim holds it;
-- the first claim of a type and priority creates it under a transaction advisory lock
-- it only tries).
-- The local and external variants read each served type's claimable index per priority
-- from its floor (tasklane.turn_floors), plus the tasks behind the floors
-- (task_queue_behind) and, external ones, the waiting fallbacks (task_queue_fallback),
-- so they never walk the index entries of the tasks claimed before the floor last rose,
-- which a held snapshot keeps from vacuum for as long as it lasts (see the scans below).
-- One ordered scan per served type (the claimable and fallback indexes lead with
-- task_type), each locking up to $3 of its tasks, merged in claim order and cut to $3:
-- one scan in priority order over every type would walk the whole backlog of the types
-- this claimer does not run before reaching its own, so a claim beside a large backlog
-- of another type would cost many times a claim by type. Rows locked by a type's scan
-- beyond the merged $3 are let go when the claim commits (it runs alone): a claimer
-- serving several types with backlogs locks up to $3 per type for that instant, and
-- another claimer that finds only those rows comes back short and waits for its next
-- wake-up or poll; the claimer that locked them came back full and claims again at once.
-- Tasks of an app under an emergency stop (tasklane.emergency_stops) are left waiting
-- too, queued and retrying ones alike (a new attempt is new work); a global stop (app
-- '') holds every task: both are init plans as well, the global one a one-time filter
-- (nothing is scanned) and the stopped apps one array read once per claim. The array
-- test is written `NOT (ARRAY[app] <@ ...)` on purpose: `app <> ALL (...)` is
-- estimated from app's statistics, which for a one-app backlog say no task passes, and
-- the claim would plan as a scan and sort of the whole backlog again.
-- The variant for claimers none of whose task types names a resource: tasks holding a
-- resource are left to resource-aware claimers, so this stays as cheap as a claim
-- without resources.
-- Locks: up to $3 rows per served type (local: per served type and priority, and $3
-- behind), of which up to $3 are claimed (the rest are let go at commit), and the
-- turn_points rows of the claimed types and priorities (FOR
-- UPDATE SKIP LOCKED: never waits on another claimer).
WITH picked AS (
    SELECT c.id, c.priority, c.run_at, c.task_type, c.turn,
           c.turn - min(c.turn) OVER (PARTITION BY c.task_type, c.priority) AS rel
    FROM (SELECT DISTINCT u.name FROM unnest($1::text[]) AS u(name) WHERE NOT EXISTS (SELECT 1 FROM tasklane.paused_task_types p WHERE p.task_type = u.name)) ty
    CROSS JOIN LATERAL (
    -- Each priority of the type from its floor up (tasklane.turn_floors): the entries
    -- below it are those of the tasks the claims have passed, dead once claimed, which
    -- a held snapshot keeps in the index for as long as it lasts. Every claimable task
    -- below a floor is marked behind (the maintenance role's floor keeper moves it,
    -- sql/floors_raise.sql), and the behind ones are read whole, from their own index.
    -- Each scan locks up to $3; the type's rows are merged below.
    -- The type's floors come from tasklane.floors_of, which reads each from the top of
    -- its index: by the key a read would visit every version a held snapshot keeps.
    SELECT a.* FROM (
    SELECT x.*
    FROM tasklane.floors_of(ty.name) f
    CROSS JOIN LATERAL (
    SELECT t.id, q.resource, q.priority, q.run_at, q.task_type, q.turn
    FROM tasklane.task_queue q
    JOIN tasklane.tasks t ON t.id = q.id
    WHERE q.state IN ('queued', 'waiting_for_retry') AND NOT q.behind
      AND q.priority = f.priority AND q.turn >= f.floor
      AND q.run_at <= now()
      AND q.task_type = ty.name
      AND ($5::text IS NULL OR q.app = $5)
      AND ($6::text IS NULL OR q.scope_id = $6)
      AND (q.deadline_at IS NULL OR q.deadline_at > now())
      AND NOT EXISTS (SELECT 1 FROM tasklane.emergency_stops e WHERE e.app = '')
      AND NOT (ARRAY[q.app] <@ ARRAY(SELECT e.app FROM tasklane.emergency_stops e))
      AND q.resource IS NULL
      AND q.privacy = 'external_allowed'
      -- The mirror is read as of this statement's snapshot; the task row is the truth,
      -- locked and (when changed since) rechecked on its newest version, so only what
      -- can change after submit is tested again here.
      AND t.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
      AND t.run_at <= now()
    ORDER BY q.turn, q.id
    LIMIT $3
    FOR UPDATE OF t SKIP LOCKED
    ) x
    ) a
    UNION ALL
    SELECT b.* FROM (
    SELECT t.id, q.resource, q.priority, q.run_at, q.task_type, q.turn
    FROM tasklane.task_queue q
    JOIN tasklane.tasks t ON t.id = q.id
    WHERE q.state IN ('queued', 'waiting_for_retry') AND q.behind
      AND q.run_at <= now()
      AND q.task_type = ty.name
      AND ($5::text IS NULL OR q.app = $5)
      AND ($6::text IS NULL OR q.scope_id = $6)
      AND (q.deadline_at IS NULL OR q.deadline_at > now())
      AND NOT EXISTS (SELECT 1 FROM tasklane.emergency_stops e WHERE e.app = '')
      AND NOT (ARRAY[q.app] <@ ARRAY(SELECT e.app FROM tasklane.emergency_stops e))
      AND q.resource IS NULL
      AND q.privacy = 'external_allowed'
      -- The mirror is read as of this statement's snapshot; the task row is the truth,
      -- locked and (when changed since) rechecked on its newest version, so only what
      -- can change after submit is tested again here.
      AND t.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
      AND t.run_at <= now()
    ORDER BY q.priority DESC, q.turn, q.id
    LIMIT $3
    FOR UPDATE OF t SKIP LOCKED
    ) b
    -- The waiting fallbacks, from their own index: they keep their turns, and are few.
    UNION ALL
    SELECT w.* FROM (
    SELECT t.id, q.resource, q.priority, q.run_at, q.task_type, q.turn
    FROM tasklane.task_queue q
    JOIN tasklane.tasks t ON t.id = q.id
    WHERE q.state = 'waiting_for_external_fallback'
      AND q.run_at <= now()
      AND q.task_type = ty.name
      AND ($5::text IS NULL OR q.app = $5)
      AND ($6::text IS NULL OR q.scope_id = $6)
      AND (q.deadline_at IS NULL OR q.deadline_at > now())
      AND NOT EXISTS (SELECT 1 FROM tasklane.emergency_stops e WHERE e.app = '')
      AND NOT (ARRAY[q.app] <@ ARRAY(SELECT e.app FROM tasklane.emergency_stops e))
      AND q.resource IS NULL
      AND q.privacy = 'external_allowed'
      -- The mirror is read as of this statement's snapshot; the task row is the truth,
      -- locked and (when changed since) rechecked on its newest version, so only what
      -- can change after submit is tested again here.
      AND t.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
      AND t.run_at <= now()
    ORDER BY q.priority DESC, q.turn, q.id
    LIMIT $3
    FOR UPDATE OF t SKIP LOCKED
    ) w
    ) c
    ORDER BY c.priority DESC, rel, c.run_at, c.id
    LIMIT $3
), claimed AS (
    -- The claim finds its picked rows again by id (`t.id = ANY (ARRAY(...))` alone, an
    -- index scan of the primary key whatever the estimates; the slot granted to each is
    -- looked up by a subquery, not a join): claims run with generic plans, which take
    -- `LIMIT $3` for a tenth of the claimable backlog, and joined to that many picked
    -- rows the planner hashes a sequential scan of the whole tasks table into every
    -- claim, whose cost then grows with the table, not with the claim. Not both: beside
    -- the join, the array's estimate of 10 rows makes it a nested loop testing every
    -- pair of picked rows, quadratic in the claim's size.
    UPDATE tasklane.tasks t
    SET state = 'running',
        attempt = t.attempt + 1,
        -- One token for the whole claim, drawn once (an init plan): the fence is the
        -- pair (id, lease_token), so one token serves every row, and gen_random_uuid()
        -- for each row would be a per-row cost for nothing.
        lease_token = (SELECT gen_random_uuid()),
        -- The lease never outlives the attempt's deadline (heartbeat.sql keeps it so):
        -- an attempt past it is found by the rescuers' index on lease_expires_at.
        lease_expires_at = now() + least(t.lease_seconds, t.attempt_timeout_seconds) * interval '1 second',
        attempt_started_at = now(),
        attempt_deadline_at = now() + t.attempt_timeout_seconds * interval '1 second',
        worker_id = $2,
        replica_id = $4,
        route = 'external',
        started_at = coalesce(t.started_at, now()),
        phase = NULL,
        progress = CASE WHEN t.snapshot IS NULL THEN NULL ELSE t.progress END,
        event_seq = t.event_seq + 1
    WHERE t.id = ANY (ARRAY(SELECT p.id FROM picked p))
    RETURNING t.id, t.app, t.scope_id, t.task_type, t.attempt, t.max_attempts, t.lease_token,
              t.lease_expires_at, t.lease_seconds, t.attempt_timeout_seconds, t.input,
              t.snapshot, t.deadline_at, t.privacy, t.event_seq, t.run_at, t.traceparent,
              t.attempt_deadline_at
), mirrored AS (
    -- The claimed tasks' mirror rows, written here with one primary-key probe each
    -- (tasklane.mirror_claimed): the update trigger would compare each row again and
    -- upsert it. In a function of its own because only there can the plan be kept from
    -- a sequential scan: the mirror holds only live tasks, and under a snapshot held
    -- open its statistics say it has a handful of rows spread over many pages (every
    -- task claimed or finished since the snapshot, which vacuum may not remove), so the
    -- planner reads its whole heap rather than its bloated primary key, at every claim;
    -- sequential scans stay allowed for the claim itself (the external claims need
    -- them). The ids and the leases' ends go as two arrays (one aggregate row).
    SELECT m.written
    FROM (SELECT array_agg(c.id) AS ids, array_agg(c.lease_expires_at) AS ends
          FROM claimed c) a
    CROSS JOIN LATERAL tasklane.mirror_claimed(a.ids, a.ends) m
), written AS (
    -- The setting tells the trigger this statement wrote them; it is set only when a
    -- row was, so only when tasks were updated and the trigger fires to consume it.
    -- Once a statement (the answer joins it): set for each row, it would cost every
    -- row a function call.
    SELECT set_config('tasklane.queue_written', 'on', true) AS written
    WHERE EXISTS (SELECT 1 FROM mirrored m WHERE m.written > 0)
), events AS (
    INSERT INTO tasklane.task_events (task_id, seq, type, data)
    -- A first attempt's data is a constant: building the object is a per-row cost
    -- the common case skips.
    SELECT id, event_seq, 'task.running',
           CASE WHEN attempt = 1 THEN '{"attempt": 1, "route": "external"}'::jsonb
                ELSE jsonb_build_object('attempt', attempt, 'route', 'external') END
    FROM claimed
), reached AS (
    -- The highest turn claimed of each task type and priority: where the claims have got.
    SELECT k.task_type, k.priority, max(k.turn) AS turn
    FROM picked k
    JOIN claimed c ON c.id = k.id
    GROUP BY k.task_type, k.priority
), raised AS (
    -- Raised in a function of its own (tasklane.raise_points: one aggregate row), which
    -- reads each point from the top of its index and writes it by its address: by its
    -- key, a read would visit every version of the row a held snapshot keeps.
    SELECT tasklane.raise_points(array_agg(r.task_type), array_agg(r.priority),
                                 array_agg(r.turn)) AS raised
    FROM reached r
)
SELECT c.id, c.app, c.scope_id, c.task_type, c.attempt, c.max_attempts, c.lease_token,
       c.lease_expires_at, c.lease_seconds, c.attempt_timeout_seconds, c.input, c.snapshot,
       c.deadline_at, c.privacy, c.run_at AS claimable_at, c.traceparent,
       c.attempt_deadline_at
FROM claimed c
JOIN picked k ON k.id = c.id
LEFT JOIN written ON true
LEFT JOIN raised ON true
-- In claim order, as the worker protocol promises (an UPDATE returns its rows in the
-- order its plan met them).
ORDER BY k.priority DESC, k.rel, k.run_at, k.id;
END
$claim$;

CREATE OR REPLACE FUNCTION tasklane.claim_fallback(p_task_types text[], p_worker_id text, p_limit bigint, p_replica_id uuid, p_app text, p_scope_id text) RETURNS TABLE(id uuid, app text, scope_id text, task_type text, attempt integer, max_attempts integer, lease_token uuid, lease_expires_at timestamp with time zone, lease_seconds integer, attempt_timeout_seconds integer, input jsonb, snapshot jsonb, deadline_at timestamp with time zone, privacy text, claimable_at timestamp with time zone, traceparent text, attempt_deadline_at timestamp with time zone)
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_bitmapscan TO 'off'
    SET jit TO 'off'
    AS $claim$
#variable_conflict use_column
BEGIN
    RETURN QUERY
-- transition: Claim only waiting_for_external_fallback
--   (the external claim of types whose routes go local first: only their fallbacks)
-- Claims up to $3 tasks for an external worker, only those waiting for an external
-- fallback (privacy external_allowed): the types that run their local routes first
-- (openai types with local routes) must never be taken off the queue externally.
-- One statement: the SKIP LOCKED selection sits in a CTE so LIMIT bounds what is
-- updated. Candidates come from the narrow mirror tasklane.task_queue (it holds only
-- live tasks and carries the queue's indexes), the locks from the tasks rows. Each
-- claim gets a fresh random lease token (one for the statement's tasks), counts an
-- attempt, starts its clock (attempt_started_at, attempt_deadline_at) and writes its
-- task.running event. Rendered from sql/claim.sql: the external, aware variant.
-- It writes the claimed tasks' mirror rows itself (the `mirrored` CTE) and sets the
-- transaction's tasklane.queue_written, so the mirror's update trigger skips it.
-- $1 task_types text[], $2 worker_id, $3 limit, $4 replica_id (nullable: remote worker),
-- $5 app, $6 scope_id (each nullable: any; remote workers claim only their token's tasks).
-- Tasks of a paused type (tasklane.paused_task_types) are left queued: the paused types
-- are taken out of $1 first, which keeps the plan an index scan in claim order (a NOT
-- EXISTS on each task would make it a scan and sort of the whole backlog).
-- Claim order is priority (higher first), then turn: the mirror row's turn, which a
-- task takes when it becomes claimable (tasklane.take_turns: start-time fair queueing
-- over apps by weight and, within an app, over its usage subjects), so a tenant's
-- backlog is interleaved with every other tenant's work instead of going first because
-- it is older. Turns of different task types are counted apart: the types' scans are
-- merged by each one's distance from its own first turn in this claim (a turn about,
-- the older first at the same distance).
-- Each claim raises tasklane.turn_points, where the claims have got, to the highest turn
-- it took (tasklane.raise_points: an unlogged row, skipped when another claim holds it;
-- the first claim of a type and priority creates it under a transaction advisory lock
-- it only tries).
-- The local and external variants read each served type's claimable index per priority
-- from its floor (tasklane.turn_floors), plus the tasks behind the floors
-- (task_queue_behind) and, external ones, the waiting fallbacks (task_queue_fallback),
-- so they never walk the index entries of the tasks claimed before the floor last rose,
-- which a held snapshot keeps from vacuum for as long as it lasts (see the scans below).
-- One ordered scan per served type (the claimable and fallback indexes lead with
-- task_type), each locking up to $3 of its tasks, merged in claim order and cut to $3:
-- one scan in priority order over every type would walk the whole backlog of the types
-- this claimer does not run before reaching its own, so a claim beside a large backlog
-- of another type would cost many times a claim by type. Rows locked by a type's scan
-- beyond the merged $3 are let go when the claim commits (it runs alone): a claimer
-- serving several types with backlogs locks up to $3 per type for that instant, and
-- another claimer that finds only those rows comes back short and waits for its next
-- wake-up or poll; the claimer that locked them came back full and claims again at once.
-- Tasks of an app under an emergency stop (tasklane.emergency_stops) are left waiting
-- too, queued and retrying ones alike (a new attempt is new work); a global stop (app
-- '') holds every task: both are init plans as well, the global one a one-time filter
-- (nothing is scanned) and the stopped apps one array read once per claim. The array
-- test is written `NOT (ARRAY[app] <@ ...)` on purpose: `app <> ALL (...)` is
-- estimated from app's statistics, which for a one-app backlog say no task passes, and
-- the claim would plan as a scan and sort of the whole backlog again.
-- Resource slots: a task whose type names a configured resource is claimed
-- only with a free slot of it, taken in this statement (so a resource's cluster-wide
-- limit always holds); tasks without one pay only for an empty-table probe. A resource
-- with retired slots (lowered below what runs) hands out none until they are gone; a
-- resource with no row in tasklane.resources is unlimited.
-- Locks: up to $3 rows per served type (local: per served type and priority, and $3
-- behind), of which up to $3 are claimed (the rest are let go at commit), and up to $3
-- free slots (FOR UPDATE SKIP LOCKED: never waits on
-- another claimer), and the turn_points rows of the claimed types and priorities
-- (SKIP LOCKED).
WITH slots AS (
    SELECT s.resource, s.slot
    FROM tasklane.resource_slots s
    WHERE s.task_id IS NULL
      AND NOT EXISTS (SELECT 1 FROM tasklane.resource_slots r WHERE r.resource = s.resource AND r.retired)
      AND EXISTS (SELECT 1 FROM tasklane.task_queue q
                  WHERE q.resource = s.resource AND q.state IN ('waiting_for_external_fallback')
                    AND q.task_type = ANY (ARRAY(SELECT ty.name FROM (SELECT DISTINCT u.name FROM unnest($1::text[]) AS u(name) WHERE NOT EXISTS (SELECT 1 FROM tasklane.paused_task_types p WHERE p.task_type = u.name)) ty)) AND q.run_at <= now()
                    AND ($5::text IS NULL OR q.app = $5) AND ($6::text IS NULL OR q.scope_id = $6)
                    AND NOT EXISTS (SELECT 1 FROM tasklane.emergency_stops e WHERE e.app = '')
                    AND NOT (ARRAY[q.app] <@ ARRAY(SELECT e.app FROM tasklane.emergency_stops e))
                    AND q.privacy = 'external_allowed'
                 )
    LIMIT $3
    FOR UPDATE OF s SKIP LOCKED
), picked AS (
    SELECT c.id, c.resource, c.priority, c.run_at, c.task_type, c.turn,
           c.turn - min(c.turn) OVER (PARTITION BY c.task_type, c.priority) AS rel
    FROM (SELECT DISTINCT u.name FROM unnest($1::text[]) AS u(name) WHERE NOT EXISTS (SELECT 1 FROM tasklane.paused_task_types p WHERE p.task_type = u.name)) ty
    CROSS JOIN LATERAL (
    SELECT t.id, q.resource, q.priority, q.run_at, q.task_type, q.turn
    FROM tasklane.task_queue q
    JOIN tasklane.tasks t ON t.id = q.id
    WHERE q.state IN ('waiting_for_external_fallback')
      AND q.run_at <= now()
      AND q.task_type = ty.name
      AND ($5::text IS NULL OR q.app = $5)
      AND ($6::text IS NULL OR q.scope_id = $6)
      AND (q.deadline_at IS NULL OR q.deadline_at > now())
      AND NOT EXISTS (SELECT 1 FROM tasklane.emergency_stops e WHERE e.app = '')
      AND NOT (ARRAY[q.app] <@ ARRAY(SELECT e.app FROM tasklane.emergency_stops e))
      AND q.privacy = 'external_allowed'
      AND (q.resource IS NULL
           OR q.resource IN (SELECT resource FROM slots)
           OR NOT EXISTS (SELECT 1 FROM tasklane.resources r WHERE r.name = q.resource))
      -- The mirror is read as of this statement's snapshot; the task row is the truth,
      -- locked and (when changed since) rechecked on its newest version, so only what
      -- can change after submit is tested again here.
      AND t.state IN ('waiting_for_external_fallback')
      AND t.run_at <= now()
    ORDER BY q.priority DESC, q.turn, q.id
    LIMIT $3
    FOR UPDATE OF t SKIP LOCKED
    ) c
    ORDER BY c.priority DESC, rel, c.run_at, c.id
    LIMIT $3
), granted AS (
    -- The n-th picked task of a resource gets its n-th free slot; the rest wait.
    SELECT p.id, s.resource AS slot_resource, s.slot
    FROM (SELECT id, resource,
                 row_number() OVER (PARTITION BY resource ORDER BY priority DESC, rel, run_at, id) AS n
          FROM picked) p
    LEFT JOIN (SELECT resource, slot, row_number() OVER (PARTITION BY resource ORDER BY slot) AS n
               FROM slots) s ON s.resource = p.resource AND s.n = p.n
    WHERE p.resource IS NULL OR s.slot IS NOT NULL
       OR NOT EXISTS (SELECT 1 FROM tasklane.resources r WHERE r.name = p.resource)
), taken AS (
    UPDATE tasklane.resource_slots rs SET task_id = g.id
    FROM granted g
    WHERE rs.resource = g.slot_resource AND rs.slot = g.slot
), claimed AS (
    -- The claim finds its picked rows again by id (`t.id = ANY (ARRAY(...))` alone, an
    -- index scan of the primary key whatever the estimates; the slot granted to each is
    -- looked up by a subquery, not a join): claims run with generic plans, which take
    -- `LIMIT $3` for a tenth of the claimable backlog, and joined to that many picked
    -- rows the planner hashes a sequential scan of the whole tasks table into every
    -- claim, whose cost then grows with the table, not with the claim. Not both: beside
    -- the join, the array's estimate of 10 rows makes it a nested loop testing every
    -- pair of picked rows, quadratic in the claim's size.
    UPDATE tasklane.tasks t
    SET state = 'running',
        attempt = t.attempt + 1,
        -- One token for the whole claim, drawn once (an init plan): the fence is the
        -- pair (id, lease_token), so one token serves every row, and gen_random_uuid()
        -- for each row would be a per-row cost for nothing.
        lease_token = (SELECT gen_random_uuid()),
        -- The lease never outlives the attempt's deadline (heartbeat.sql keeps it so):
        -- an attempt past it is found by the rescuers' index on lease_expires_at.
        lease_expires_at = now() + least(t.lease_seconds, t.attempt_timeout_seconds) * interval '1 second',
        attempt_started_at = now(),
        attempt_deadline_at = now() + t.attempt_timeout_seconds * interval '1 second',
        worker_id = $2,
        replica_id = $4,
        route = 'external',
        started_at = coalesce(t.started_at, now()),
        phase = NULL,
        progress = CASE WHEN t.snapshot IS NULL THEN NULL ELSE t.progress END,
        resource_slot = (SELECT g.slot FROM granted g WHERE g.id = t.id),
        event_seq = t.event_seq + 1
    WHERE t.id = ANY (ARRAY(SELECT g.id FROM granted g))
    RETURNING t.id, t.app, t.scope_id, t.task_type, t.attempt, t.max_attempts, t.lease_token,
              t.lease_expires_at, t.lease_seconds, t.attempt_timeout_seconds, t.input,
              t.snapshot, t.deadline_at, t.privacy, t.event_seq, t.run_at, t.traceparent,
              t.attempt_deadline_at
), mirrored AS (
    -- The claimed tasks' mirror rows, written here with one primary-key probe each
    -- (tasklane.mirror_claimed): the update trigger would compare each row again and
    -- upsert it. In a function of its own because only there can the plan be kept from
    -- a sequential scan: the mirror holds only live tasks, and under a snapshot held
    -- open its statistics say it has a handful of rows spread over many pages (every
    -- task claimed or finished since the snapshot, which vacuum may not remove), so the
    -- planner reads its whole heap rather than its bloated primary key, at every claim;
    -- sequential scans stay allowed for the claim itself (the external claims need
    -- them). The ids and the leases' ends go as two arrays (one aggregate row).
    SELECT m.written
    FROM (SELECT array_agg(c.id) AS ids, array_agg(c.lease_expires_at) AS ends
          FROM claimed c) a
    CROSS JOIN LATERAL tasklane.mirror_claimed(a.ids, a.ends) m
), written AS (
    -- The setting tells the trigger this statement wrote them; it is set only when a
    -- row was, so only when tasks were updated and the trigger fires to consume it.
    -- Once a statement (the answer joins it): set for each row, it would cost every
    -- row a function call.
    SELECT set_config('tasklane.queue_written', 'on', true) AS written
    WHERE EXISTS (SELECT 1 FROM mirrored m WHERE m.written > 0)
), events AS (
    INSERT INTO tasklane.task_events (task_id, seq, type, data)
    -- A first attempt's data is a constant: building the object is a per-row cost
    -- the common case skips.
    SELECT id, event_seq, 'task.running',
           CASE WHEN attempt = 1 THEN '{"attempt": 1, "route": "external"}'::jsonb
                ELSE jsonb_build_object('attempt', attempt, 'route', 'external') END
    FROM claimed
), reached AS (
    -- The highest turn claimed of each task type and priority: where the claims have got.
    SELECT k.task_type, k.priority, max(k.turn) AS turn
    FROM picked k
    JOIN claimed c ON c.id = k.id
    GROUP BY k.task_type, k.priority
), raised AS (
    -- Raised in a function of its own (tasklane.raise_points: one aggregate row), which
    -- reads each point from the top of its index and writes it by its address: by its
    -- key, a read would visit every version of the row a held snapshot keeps.
    SELECT tasklane.raise_points(array_agg(r.task_type), array_agg(r.priority),
                                 array_agg(r.turn)) AS raised
    FROM reached r
)
SELECT c.id, c.app, c.scope_id, c.task_type, c.attempt, c.max_attempts, c.lease_token,
       c.lease_expires_at, c.lease_seconds, c.attempt_timeout_seconds, c.input, c.snapshot,
       c.deadline_at, c.privacy, c.run_at AS claimable_at, c.traceparent,
       c.attempt_deadline_at
FROM claimed c
JOIN picked k ON k.id = c.id
LEFT JOIN written ON true
LEFT JOIN raised ON true
-- In claim order, as the worker protocol promises (an UPDATE returns its rows in the
-- order its plan met them).
ORDER BY k.priority DESC, k.rel, k.run_at, k.id;
END
$claim$;

CREATE OR REPLACE FUNCTION tasklane.claim_fallback_plain(p_task_types text[], p_worker_id text, p_limit bigint, p_replica_id uuid, p_app text, p_scope_id text) RETURNS TABLE(id uuid, app text, scope_id text, task_type text, attempt integer, max_attempts integer, lease_token uuid, lease_expires_at timestamp with time zone, lease_seconds integer, attempt_timeout_seconds integer, input jsonb, snapshot jsonb, deadline_at timestamp with time zone, privacy text, claimable_at timestamp with time zone, traceparent text, attempt_deadline_at timestamp with time zone)
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_bitmapscan TO 'off'
    SET jit TO 'off'
    AS $claim$
#variable_conflict use_column
BEGIN
    RETURN QUERY
-- transition: Claim only waiting_for_external_fallback
--   (the external claim of types whose routes go local first: only their fallbacks)
-- Claims up to $3 tasks for an external worker, only those waiting for an external
-- fallback (privacy external_allowed): the types that run their local routes first
-- (openai types with local routes) must never be taken off the queue externally.
-- One statement: the SKIP LOCKED selection sits in a CTE so LIMIT bounds what is
-- updated. Candidates come from the narrow mirror tasklane.task_queue (it holds only
-- live tasks and carries the queue's indexes), the locks from the tasks rows. Each
-- claim gets a fresh random lease token (one for the statement's tasks), counts an
-- attempt, starts its clock (attempt_started_at, attempt_deadline_at) and writes its
-- task.running event. Rendered from sql/claim.sql: the external, plain variant.
-- It writes the claimed tasks' mirror rows itself (the `mirrored` CTE) and sets the
-- transaction's tasklane.queue_written, so the mirror's update trigger skips it.
-- $1 task_types text[], $2 worker_id, $3 limit, $4 replica_id (nullable: remote worker),
-- $5 app, $6 scope_id (each nullable: any; remote workers claim only their token's tasks).
-- Tasks of a paused type (tasklane.paused_task_types) are left queued: the paused types
-- are taken out of $1 first, which keeps the plan an index scan in claim order (a NOT
-- EXISTS on each task would make it a scan and sort of the whole backlog).
-- Claim order is priority (higher first), then turn: the mirror row's turn, which a
-- task takes when it becomes claimable (tasklane.take_turns: start-time fair queueing
-- over apps by weight and, within an app, over its usage subjects), so a tenant's
-- backlog is interleaved with every other tenant's work instead of going first because
-- it is older. Turns of different task types are counted apart: the types' scans are
-- merged by each one's distance from its own first turn in this claim (a turn about,
-- the older first at the same distance).
-- Each claim raises tasklane.turn_points, where the claims have got, to the highest turn
-- it took (tasklane.raise_points: an unlogged row, skipped when another claim holds it;
-- the first claim of a type and priority creates it under a transaction advisory lock
-- it only tries).
-- The local and external variants read each served type's claimable index per priority
-- from its floor (tasklane.turn_floors), plus the tasks behind the floors
-- (task_queue_behind) and, external ones, the waiting fallbacks (task_queue_fallback),
-- so they never walk the index entries of the tasks claimed before the floor last rose,
-- which a held snapshot keeps from vacuum for as long as it lasts (see the scans below).
-- One ordered scan per served type (the claimable and fallback indexes lead with
-- task_type), each locking up to $3 of its tasks, merged in claim order and cut to $3:
-- one scan in priority order over every type would walk the whole backlog of the types
-- this claimer does not run before reaching its own, so a claim beside a large backlog
-- of another type would cost many times a claim by type. Rows locked by a type's scan
-- beyond the merged $3 are let go when the claim commits (it runs alone): a claimer
-- serving several types with backlogs locks up to $3 per type for that instant, and
-- another claimer that finds only those rows comes back short and waits for its next
-- wake-up or poll; the claimer that locked them came back full and claims again at once.
-- Tasks of an app under an emergency stop (tasklane.emergency_stops) are left waiting
-- too, queued and retrying ones alike (a new attempt is new work); a global stop (app
-- '') holds every task: both are init plans as well, the global one a one-time filter
-- (nothing is scanned) and the stopped apps one array read once per claim. The array
-- test is written `NOT (ARRAY[app] <@ ...)` on purpose: `app <> ALL (...)` is
-- estimated from app's statistics, which for a one-app backlog say no task passes, and
-- the claim would plan as a scan and sort of the whole backlog again.
-- The variant for claimers none of whose task types names a resource: tasks holding a
-- resource are left to resource-aware claimers, so this stays as cheap as a claim
-- without resources.
-- Locks: up to $3 rows per served type (local: per served type and priority, and $3
-- behind), of which up to $3 are claimed (the rest are let go at commit), and the
-- turn_points rows of the claimed types and priorities (FOR
-- UPDATE SKIP LOCKED: never waits on another claimer).
WITH picked AS (
    SELECT c.id, c.priority, c.run_at, c.task_type, c.turn,
           c.turn - min(c.turn) OVER (PARTITION BY c.task_type, c.priority) AS rel
    FROM (SELECT DISTINCT u.name FROM unnest($1::text[]) AS u(name) WHERE NOT EXISTS (SELECT 1 FROM tasklane.paused_task_types p WHERE p.task_type = u.name)) ty
    CROSS JOIN LATERAL (
    SELECT t.id, q.resource, q.priority, q.run_at, q.task_type, q.turn
    FROM tasklane.task_queue q
    JOIN tasklane.tasks t ON t.id = q.id
    WHERE q.state IN ('waiting_for_external_fallback')
      AND q.run_at <= now()
      AND q.task_type = ty.name
      AND ($5::text IS NULL OR q.app = $5)
      AND ($6::text IS NULL OR q.scope_id = $6)
      AND (q.deadline_at IS NULL OR q.deadline_at > now())
      AND NOT EXISTS (SELECT 1 FROM tasklane.emergency_stops e WHERE e.app = '')
      AND NOT (ARRAY[q.app] <@ ARRAY(SELECT e.app FROM tasklane.emergency_stops e))
      AND q.resource IS NULL
      AND q.privacy = 'external_allowed'
      -- The mirror is read as of this statement's snapshot; the task row is the truth,
      -- locked and (when changed since) rechecked on its newest version, so only what
      -- can change after submit is tested again here.
      AND t.state IN ('waiting_for_external_fallback')
      AND t.run_at <= now()
    ORDER BY q.priority DESC, q.turn, q.id
    LIMIT $3
    FOR UPDATE OF t SKIP LOCKED
    ) c
    ORDER BY c.priority DESC, rel, c.run_at, c.id
    LIMIT $3
), claimed AS (
    -- The claim finds its picked rows again by id (`t.id = ANY (ARRAY(...))` alone, an
    -- index scan of the primary key whatever the estimates; the slot granted to each is
    -- looked up by a subquery, not a join): claims run with generic plans, which take
    -- `LIMIT $3` for a tenth of the claimable backlog, and joined to that many picked
    -- rows the planner hashes a sequential scan of the whole tasks table into every
    -- claim, whose cost then grows with the table, not with the claim. Not both: beside
    -- the join, the array's estimate of 10 rows makes it a nested loop testing every
    -- pair of picked rows, quadratic in the claim's size.
    UPDATE tasklane.tasks t
    SET state = 'running',
        attempt = t.attempt + 1,
        -- One token for the whole claim, drawn once (an init plan): the fence is the
        -- pair (id, lease_token), so one token serves every row, and gen_random_uuid()
        -- for each row would be a per-row cost for nothing.
        lease_token = (SELECT gen_random_uuid()),
        -- The lease never outlives the attempt's deadline (heartbeat.sql keeps it so):
        -- an attempt past it is found by the rescuers' index on lease_expires_at.
        lease_expires_at = now() + least(t.lease_seconds, t.attempt_timeout_seconds) * interval '1 second',
        attempt_started_at = now(),
        attempt_deadline_at = now() + t.attempt_timeout_seconds * interval '1 second',
        worker_id = $2,
        replica_id = $4,
        route = 'external',
        started_at = coalesce(t.started_at, now()),
        phase = NULL,
        progress = CASE WHEN t.snapshot IS NULL THEN NULL ELSE t.progress END,
        event_seq = t.event_seq + 1
    WHERE t.id = ANY (ARRAY(SELECT p.id FROM picked p))
    RETURNING t.id, t.app, t.scope_id, t.task_type, t.attempt, t.max_attempts, t.lease_token,
              t.lease_expires_at, t.lease_seconds, t.attempt_timeout_seconds, t.input,
              t.snapshot, t.deadline_at, t.privacy, t.event_seq, t.run_at, t.traceparent,
              t.attempt_deadline_at
), mirrored AS (
    -- The claimed tasks' mirror rows, written here with one primary-key probe each
    -- (tasklane.mirror_claimed): the update trigger would compare each row again and
    -- upsert it. In a function of its own because only there can the plan be kept from
    -- a sequential scan: the mirror holds only live tasks, and under a snapshot held
    -- open its statistics say it has a handful of rows spread over many pages (every
    -- task claimed or finished since the snapshot, which vacuum may not remove), so the
    -- planner reads its whole heap rather than its bloated primary key, at every claim;
    -- sequential scans stay allowed for the claim itself (the external claims need
    -- them). The ids and the leases' ends go as two arrays (one aggregate row).
    SELECT m.written
    FROM (SELECT array_agg(c.id) AS ids, array_agg(c.lease_expires_at) AS ends
          FROM claimed c) a
    CROSS JOIN LATERAL tasklane.mirror_claimed(a.ids, a.ends) m
), written AS (
    -- The setting tells the trigger this statement wrote them; it is set only when a
    -- row was, so only when tasks were updated and the trigger fires to consume it.
    -- Once a statement (the answer joins it): set for each row, it would cost every
    -- row a function call.
    SELECT set_config('tasklane.queue_written', 'on', true) AS written
    WHERE EXISTS (SELECT 1 FROM mirrored m WHERE m.written > 0)
), events AS (
    INSERT INTO tasklane.task_events (task_id, seq, type, data)
    -- A first attempt's data is a constant: building the object is a per-row cost
    -- the common case skips.
    SELECT id, event_seq, 'task.running',
           CASE WHEN attempt = 1 THEN '{"attempt": 1, "route": "external"}'::jsonb
                ELSE jsonb_build_object('attempt', attempt, 'route', 'external') END
    FROM claimed
), reached AS (
    -- The highest turn claimed of each task type and priority: where the claims have got.
    SELECT k.task_type, k.priority, max(k.turn) AS turn
    FROM picked k
    JOIN claimed c ON c.id = k.id
    GROUP BY k.task_type, k.priority
), raised AS (
    -- Raised in a function of its own (tasklane.raise_points: one aggregate row), which
    -- reads each point from the top of its index and writes it by its address: by its
    -- key, a read would visit every version of the row a held snapshot keeps.
    SELECT tasklane.raise_points(array_agg(r.task_type), array_agg(r.priority),
                                 array_agg(r.turn)) AS raised
    FROM reached r
)
SELECT c.id, c.app, c.scope_id, c.task_type, c.attempt, c.max_attempts, c.lease_token,
       c.lease_expires_at, c.lease_seconds, c.attempt_timeout_seconds, c.input, c.snapshot,
       c.deadline_at, c.privacy, c.run_at AS claimable_at, c.traceparent,
       c.attempt_deadline_at
FROM claimed c
JOIN picked k ON k.id = c.id
LEFT JOIN written ON true
LEFT JOIN raised ON true
-- In claim order, as the worker protocol promises (an UPDATE returns its rows in the
-- order its plan met them).
ORDER BY k.priority DESC, k.rel, k.run_at, k.id;
END
$claim$;
