-- V47: a held snapshot's dead rows, whatever the planner's statistics say. The mirror
-- (tasklane.task_queue) holds only live tasks, so once analyzed its statistics call it
-- small, and a statement that joined it to a set of ids could be planned as a hash of a
-- scan of its whole primary key. Under a snapshot held open (a long pg_dump, a forgotten
-- transaction) that scan walks the entry of every task claimed or finished since,
-- which vacuum may not remove, and every claim and settle paid for all of them: a
-- claim of 10 and its settle read 2,000-3,000 of the mirror's pages after 1,600 tasks
-- under the hold, against 80 and 50 before it.
-- - The claim's functions (for replicas behind a pooler in transaction mode) are
--   replaced with sql/claim.sql as rendered now: its `mirrored` step finds the claimed
--   rows by `q.id = ANY (ids)`, an index probe each, and takes each lease's end from the
--   array beside the ids.
-- - The group commit's function deletes the settled tasks' mirror rows the same way, and
--   plans without sequential scans: its generic plan, kept for the session, was made
--   while the mirror had a few pages, and its sequential scan then read every dead row
--   a hold kept.
-- - The mirror's update trigger (heartbeats, retries, fails and cancels go through it)
--   reads and writes the mirror by the updated tasks' ids alone, and plans without
--   sequential scans: a heartbeat of 10 leases fetched 80 of the mirror's pages beside a
--   clean queue, 300 after 1,600 tasks under a hold, 5,800 once the queue was analyzed.
-- - The submit side's turn functions keep plans made while the queue was empty (a
--   sequential scan of a table of two pages) for the session, and the scan grew with
--   the dead rows under a hold: they now plan without sequential scans.
-- Forward-only: never edit once landed.

CREATE OR REPLACE FUNCTION tasklane.claim_local(p_task_types text[], p_worker_id text, p_limit bigint, p_replica_id uuid, p_app text, p_scope_id text)
RETURNS TABLE(id uuid, app text, scope_id text, task_type text, attempt integer,
              max_attempts integer, lease_token uuid,
              lease_expires_at timestamp with time zone, lease_seconds integer,
              attempt_timeout_seconds integer, input jsonb, snapshot jsonb,
              deadline_at timestamp with time zone, privacy text,
              claimable_at timestamp with time zone, traceparent text,
              attempt_deadline_at timestamp with time zone)
LANGUAGE plpgsql
SET plan_cache_mode TO 'force_generic_plan'
SET enable_bitmapscan TO 'off'
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
-- it took (an unlogged row, skipped when another claim holds it; the first claim of a
-- type and priority creates it under a transaction advisory lock it only tries).
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
    SELECT a.* FROM (
    SELECT x.*
    FROM tasklane.turn_floors f
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
    WHERE f.task_type = ty.name
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
    -- The claimed tasks' mirror rows, written here with one primary-key probe each:
    -- the update trigger would compare each row again and upsert it. Found by
    -- `q.id = ANY (ids)` alone, not joined to `claimed`: the mirror holds only live
    -- tasks, so once analyzed its statistics say it is small, and the planner then
    -- hashes a scan of its whole primary key into the join. Under a snapshot held open
    -- that scan walks the entry of every task claimed since the snapshot, which vacuum
    -- may not remove: each claim's cost would grow with them. The lease's end comes from
    -- the array beside the ids (a search of at most a claim's length, in C).
    UPDATE tasklane.task_queue q
    SET state = 'running', lease_expires_at = a.leases[array_position(a.ids, q.id)]
    FROM (SELECT array_agg(c.id) AS ids, array_agg(c.lease_expires_at) AS leases FROM claimed c) a
    WHERE q.id = ANY (a.ids)
    RETURNING q.id
), written AS (
    -- The setting tells the trigger this statement wrote them; it is set only when a
    -- row was, so only when tasks were updated and the trigger fires to consume it.
    -- Once a statement (the answer joins it): set for each row, it would cost every
    -- row a function call.
    SELECT set_config('tasklane.queue_written', 'on', true) AS written
    WHERE EXISTS (SELECT 1 FROM mirrored)
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
), started AS (
    INSERT INTO tasklane.turn_points (task_type, priority, turn)
    SELECT r.task_type, r.priority, r.turn
    FROM reached r
    WHERE NOT EXISTS (SELECT 1 FROM tasklane.turn_points p
                      WHERE p.task_type = r.task_type AND p.priority = r.priority)
      -- One claim creates a point; another one creating it at the same time goes on
      -- without it (ON CONFLICT alone would wait for that claim to commit). The class
      -- 0x746c7470 is this lock's alone.
      AND pg_try_advisory_xact_lock(1953264752, hashtext(r.task_type || '/' || r.priority))
    ON CONFLICT DO NOTHING
), advanced AS (
    -- A point another claim holds is skipped, never waited for: that claim raises it too.
    UPDATE tasklane.turn_points p
    SET turn = r.turn
    FROM reached r
    WHERE p.task_type = r.task_type AND p.priority = r.priority AND p.turn < r.turn
      AND (p.task_type, p.priority) IN (
          SELECT x.task_type, x.priority
          FROM tasklane.turn_points x
          JOIN reached y ON y.task_type = x.task_type AND y.priority = x.priority
          WHERE x.turn < y.turn
          FOR UPDATE OF x SKIP LOCKED)
)
SELECT c.id, c.app, c.scope_id, c.task_type, c.attempt, c.max_attempts, c.lease_token,
       c.lease_expires_at, c.lease_seconds, c.attempt_timeout_seconds, c.input, c.snapshot,
       c.deadline_at, c.privacy, c.run_at AS claimable_at, c.traceparent,
       c.attempt_deadline_at
FROM claimed c
JOIN picked k ON k.id = c.id
LEFT JOIN written ON true
-- In claim order, as the worker protocol promises (an UPDATE returns its rows in the
-- order its plan met them).
ORDER BY k.priority DESC, k.rel, k.run_at, k.id;
END
$claim$;

CREATE OR REPLACE FUNCTION tasklane.claim_external(p_task_types text[], p_worker_id text, p_limit bigint, p_replica_id uuid, p_app text, p_scope_id text)
RETURNS TABLE(id uuid, app text, scope_id text, task_type text, attempt integer,
              max_attempts integer, lease_token uuid,
              lease_expires_at timestamp with time zone, lease_seconds integer,
              attempt_timeout_seconds integer, input jsonb, snapshot jsonb,
              deadline_at timestamp with time zone, privacy text,
              claimable_at timestamp with time zone, traceparent text,
              attempt_deadline_at timestamp with time zone)
LANGUAGE plpgsql
SET plan_cache_mode TO 'force_generic_plan'
SET enable_bitmapscan TO 'off'
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
-- it took (an unlogged row, skipped when another claim holds it; the first claim of a
-- type and priority creates it under a transaction advisory lock it only tries).
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
    SELECT a.* FROM (
    SELECT x.*
    FROM tasklane.turn_floors f
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
    WHERE f.task_type = ty.name
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
    -- The claimed tasks' mirror rows, written here with one primary-key probe each:
    -- the update trigger would compare each row again and upsert it. Found by
    -- `q.id = ANY (ids)` alone, not joined to `claimed`: the mirror holds only live
    -- tasks, so once analyzed its statistics say it is small, and the planner then
    -- hashes a scan of its whole primary key into the join. Under a snapshot held open
    -- that scan walks the entry of every task claimed since the snapshot, which vacuum
    -- may not remove: each claim's cost would grow with them. The lease's end comes from
    -- the array beside the ids (a search of at most a claim's length, in C).
    UPDATE tasklane.task_queue q
    SET state = 'running', lease_expires_at = a.leases[array_position(a.ids, q.id)]
    FROM (SELECT array_agg(c.id) AS ids, array_agg(c.lease_expires_at) AS leases FROM claimed c) a
    WHERE q.id = ANY (a.ids)
    RETURNING q.id
), written AS (
    -- The setting tells the trigger this statement wrote them; it is set only when a
    -- row was, so only when tasks were updated and the trigger fires to consume it.
    -- Once a statement (the answer joins it): set for each row, it would cost every
    -- row a function call.
    SELECT set_config('tasklane.queue_written', 'on', true) AS written
    WHERE EXISTS (SELECT 1 FROM mirrored)
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
), started AS (
    INSERT INTO tasklane.turn_points (task_type, priority, turn)
    SELECT r.task_type, r.priority, r.turn
    FROM reached r
    WHERE NOT EXISTS (SELECT 1 FROM tasklane.turn_points p
                      WHERE p.task_type = r.task_type AND p.priority = r.priority)
      -- One claim creates a point; another one creating it at the same time goes on
      -- without it (ON CONFLICT alone would wait for that claim to commit). The class
      -- 0x746c7470 is this lock's alone.
      AND pg_try_advisory_xact_lock(1953264752, hashtext(r.task_type || '/' || r.priority))
    ON CONFLICT DO NOTHING
), advanced AS (
    -- A point another claim holds is skipped, never waited for: that claim raises it too.
    UPDATE tasklane.turn_points p
    SET turn = r.turn
    FROM reached r
    WHERE p.task_type = r.task_type AND p.priority = r.priority AND p.turn < r.turn
      AND (p.task_type, p.priority) IN (
          SELECT x.task_type, x.priority
          FROM tasklane.turn_points x
          JOIN reached y ON y.task_type = x.task_type AND y.priority = x.priority
          WHERE x.turn < y.turn
          FOR UPDATE OF x SKIP LOCKED)
)
SELECT c.id, c.app, c.scope_id, c.task_type, c.attempt, c.max_attempts, c.lease_token,
       c.lease_expires_at, c.lease_seconds, c.attempt_timeout_seconds, c.input, c.snapshot,
       c.deadline_at, c.privacy, c.run_at AS claimable_at, c.traceparent,
       c.attempt_deadline_at
FROM claimed c
JOIN picked k ON k.id = c.id
LEFT JOIN written ON true
-- In claim order, as the worker protocol promises (an UPDATE returns its rows in the
-- order its plan met them).
ORDER BY k.priority DESC, k.rel, k.run_at, k.id;
END
$claim$;

CREATE OR REPLACE FUNCTION tasklane.claim_local_plain(p_task_types text[], p_worker_id text, p_limit bigint, p_replica_id uuid, p_app text, p_scope_id text)
RETURNS TABLE(id uuid, app text, scope_id text, task_type text, attempt integer,
              max_attempts integer, lease_token uuid,
              lease_expires_at timestamp with time zone, lease_seconds integer,
              attempt_timeout_seconds integer, input jsonb, snapshot jsonb,
              deadline_at timestamp with time zone, privacy text,
              claimable_at timestamp with time zone, traceparent text,
              attempt_deadline_at timestamp with time zone)
LANGUAGE plpgsql
SET plan_cache_mode TO 'force_generic_plan'
SET enable_bitmapscan TO 'off'
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
-- it took (an unlogged row, skipped when another claim holds it; the first claim of a
-- type and priority creates it under a transaction advisory lock it only tries).
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
    SELECT a.* FROM (
    SELECT x.*
    FROM tasklane.turn_floors f
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
    WHERE f.task_type = ty.name
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
    -- The claimed tasks' mirror rows, written here with one primary-key probe each:
    -- the update trigger would compare each row again and upsert it. Found by
    -- `q.id = ANY (ids)` alone, not joined to `claimed`: the mirror holds only live
    -- tasks, so once analyzed its statistics say it is small, and the planner then
    -- hashes a scan of its whole primary key into the join. Under a snapshot held open
    -- that scan walks the entry of every task claimed since the snapshot, which vacuum
    -- may not remove: each claim's cost would grow with them. The lease's end comes from
    -- the array beside the ids (a search of at most a claim's length, in C).
    UPDATE tasklane.task_queue q
    SET state = 'running', lease_expires_at = a.leases[array_position(a.ids, q.id)]
    FROM (SELECT array_agg(c.id) AS ids, array_agg(c.lease_expires_at) AS leases FROM claimed c) a
    WHERE q.id = ANY (a.ids)
    RETURNING q.id
), written AS (
    -- The setting tells the trigger this statement wrote them; it is set only when a
    -- row was, so only when tasks were updated and the trigger fires to consume it.
    -- Once a statement (the answer joins it): set for each row, it would cost every
    -- row a function call.
    SELECT set_config('tasklane.queue_written', 'on', true) AS written
    WHERE EXISTS (SELECT 1 FROM mirrored)
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
), started AS (
    INSERT INTO tasklane.turn_points (task_type, priority, turn)
    SELECT r.task_type, r.priority, r.turn
    FROM reached r
    WHERE NOT EXISTS (SELECT 1 FROM tasklane.turn_points p
                      WHERE p.task_type = r.task_type AND p.priority = r.priority)
      -- One claim creates a point; another one creating it at the same time goes on
      -- without it (ON CONFLICT alone would wait for that claim to commit). The class
      -- 0x746c7470 is this lock's alone.
      AND pg_try_advisory_xact_lock(1953264752, hashtext(r.task_type || '/' || r.priority))
    ON CONFLICT DO NOTHING
), advanced AS (
    -- A point another claim holds is skipped, never waited for: that claim raises it too.
    UPDATE tasklane.turn_points p
    SET turn = r.turn
    FROM reached r
    WHERE p.task_type = r.task_type AND p.priority = r.priority AND p.turn < r.turn
      AND (p.task_type, p.priority) IN (
          SELECT x.task_type, x.priority
          FROM tasklane.turn_points x
          JOIN reached y ON y.task_type = x.task_type AND y.priority = x.priority
          WHERE x.turn < y.turn
          FOR UPDATE OF x SKIP LOCKED)
)
SELECT c.id, c.app, c.scope_id, c.task_type, c.attempt, c.max_attempts, c.lease_token,
       c.lease_expires_at, c.lease_seconds, c.attempt_timeout_seconds, c.input, c.snapshot,
       c.deadline_at, c.privacy, c.run_at AS claimable_at, c.traceparent,
       c.attempt_deadline_at
FROM claimed c
JOIN picked k ON k.id = c.id
LEFT JOIN written ON true
-- In claim order, as the worker protocol promises (an UPDATE returns its rows in the
-- order its plan met them).
ORDER BY k.priority DESC, k.rel, k.run_at, k.id;
END
$claim$;

CREATE OR REPLACE FUNCTION tasklane.claim_external_plain(p_task_types text[], p_worker_id text, p_limit bigint, p_replica_id uuid, p_app text, p_scope_id text)
RETURNS TABLE(id uuid, app text, scope_id text, task_type text, attempt integer,
              max_attempts integer, lease_token uuid,
              lease_expires_at timestamp with time zone, lease_seconds integer,
              attempt_timeout_seconds integer, input jsonb, snapshot jsonb,
              deadline_at timestamp with time zone, privacy text,
              claimable_at timestamp with time zone, traceparent text,
              attempt_deadline_at timestamp with time zone)
LANGUAGE plpgsql
SET plan_cache_mode TO 'force_generic_plan'
SET enable_bitmapscan TO 'off'
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
-- it took (an unlogged row, skipped when another claim holds it; the first claim of a
-- type and priority creates it under a transaction advisory lock it only tries).
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
    SELECT a.* FROM (
    SELECT x.*
    FROM tasklane.turn_floors f
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
    WHERE f.task_type = ty.name
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
    -- The claimed tasks' mirror rows, written here with one primary-key probe each:
    -- the update trigger would compare each row again and upsert it. Found by
    -- `q.id = ANY (ids)` alone, not joined to `claimed`: the mirror holds only live
    -- tasks, so once analyzed its statistics say it is small, and the planner then
    -- hashes a scan of its whole primary key into the join. Under a snapshot held open
    -- that scan walks the entry of every task claimed since the snapshot, which vacuum
    -- may not remove: each claim's cost would grow with them. The lease's end comes from
    -- the array beside the ids (a search of at most a claim's length, in C).
    UPDATE tasklane.task_queue q
    SET state = 'running', lease_expires_at = a.leases[array_position(a.ids, q.id)]
    FROM (SELECT array_agg(c.id) AS ids, array_agg(c.lease_expires_at) AS leases FROM claimed c) a
    WHERE q.id = ANY (a.ids)
    RETURNING q.id
), written AS (
    -- The setting tells the trigger this statement wrote them; it is set only when a
    -- row was, so only when tasks were updated and the trigger fires to consume it.
    -- Once a statement (the answer joins it): set for each row, it would cost every
    -- row a function call.
    SELECT set_config('tasklane.queue_written', 'on', true) AS written
    WHERE EXISTS (SELECT 1 FROM mirrored)
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
), started AS (
    INSERT INTO tasklane.turn_points (task_type, priority, turn)
    SELECT r.task_type, r.priority, r.turn
    FROM reached r
    WHERE NOT EXISTS (SELECT 1 FROM tasklane.turn_points p
                      WHERE p.task_type = r.task_type AND p.priority = r.priority)
      -- One claim creates a point; another one creating it at the same time goes on
      -- without it (ON CONFLICT alone would wait for that claim to commit). The class
      -- 0x746c7470 is this lock's alone.
      AND pg_try_advisory_xact_lock(1953264752, hashtext(r.task_type || '/' || r.priority))
    ON CONFLICT DO NOTHING
), advanced AS (
    -- A point another claim holds is skipped, never waited for: that claim raises it too.
    UPDATE tasklane.turn_points p
    SET turn = r.turn
    FROM reached r
    WHERE p.task_type = r.task_type AND p.priority = r.priority AND p.turn < r.turn
      AND (p.task_type, p.priority) IN (
          SELECT x.task_type, x.priority
          FROM tasklane.turn_points x
          JOIN reached y ON y.task_type = x.task_type AND y.priority = x.priority
          WHERE x.turn < y.turn
          FOR UPDATE OF x SKIP LOCKED)
)
SELECT c.id, c.app, c.scope_id, c.task_type, c.attempt, c.max_attempts, c.lease_token,
       c.lease_expires_at, c.lease_seconds, c.attempt_timeout_seconds, c.input, c.snapshot,
       c.deadline_at, c.privacy, c.run_at AS claimable_at, c.traceparent,
       c.attempt_deadline_at
FROM claimed c
JOIN picked k ON k.id = c.id
LEFT JOIN written ON true
-- In claim order, as the worker protocol promises (an UPDATE returns its rows in the
-- order its plan met them).
ORDER BY k.priority DESC, k.rel, k.run_at, k.id;
END
$claim$;

CREATE OR REPLACE FUNCTION tasklane.claim_fallback(p_task_types text[], p_worker_id text, p_limit bigint, p_replica_id uuid, p_app text, p_scope_id text)
RETURNS TABLE(id uuid, app text, scope_id text, task_type text, attempt integer,
              max_attempts integer, lease_token uuid,
              lease_expires_at timestamp with time zone, lease_seconds integer,
              attempt_timeout_seconds integer, input jsonb, snapshot jsonb,
              deadline_at timestamp with time zone, privacy text,
              claimable_at timestamp with time zone, traceparent text,
              attempt_deadline_at timestamp with time zone)
LANGUAGE plpgsql
SET plan_cache_mode TO 'force_generic_plan'
SET enable_bitmapscan TO 'off'
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
-- it took (an unlogged row, skipped when another claim holds it; the first claim of a
-- type and priority creates it under a transaction advisory lock it only tries).
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
    -- The claimed tasks' mirror rows, written here with one primary-key probe each:
    -- the update trigger would compare each row again and upsert it. Found by
    -- `q.id = ANY (ids)` alone, not joined to `claimed`: the mirror holds only live
    -- tasks, so once analyzed its statistics say it is small, and the planner then
    -- hashes a scan of its whole primary key into the join. Under a snapshot held open
    -- that scan walks the entry of every task claimed since the snapshot, which vacuum
    -- may not remove: each claim's cost would grow with them. The lease's end comes from
    -- the array beside the ids (a search of at most a claim's length, in C).
    UPDATE tasklane.task_queue q
    SET state = 'running', lease_expires_at = a.leases[array_position(a.ids, q.id)]
    FROM (SELECT array_agg(c.id) AS ids, array_agg(c.lease_expires_at) AS leases FROM claimed c) a
    WHERE q.id = ANY (a.ids)
    RETURNING q.id
), written AS (
    -- The setting tells the trigger this statement wrote them; it is set only when a
    -- row was, so only when tasks were updated and the trigger fires to consume it.
    -- Once a statement (the answer joins it): set for each row, it would cost every
    -- row a function call.
    SELECT set_config('tasklane.queue_written', 'on', true) AS written
    WHERE EXISTS (SELECT 1 FROM mirrored)
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
), started AS (
    INSERT INTO tasklane.turn_points (task_type, priority, turn)
    SELECT r.task_type, r.priority, r.turn
    FROM reached r
    WHERE NOT EXISTS (SELECT 1 FROM tasklane.turn_points p
                      WHERE p.task_type = r.task_type AND p.priority = r.priority)
      -- One claim creates a point; another one creating it at the same time goes on
      -- without it (ON CONFLICT alone would wait for that claim to commit). The class
      -- 0x746c7470 is this lock's alone.
      AND pg_try_advisory_xact_lock(1953264752, hashtext(r.task_type || '/' || r.priority))
    ON CONFLICT DO NOTHING
), advanced AS (
    -- A point another claim holds is skipped, never waited for: that claim raises it too.
    UPDATE tasklane.turn_points p
    SET turn = r.turn
    FROM reached r
    WHERE p.task_type = r.task_type AND p.priority = r.priority AND p.turn < r.turn
      AND (p.task_type, p.priority) IN (
          SELECT x.task_type, x.priority
          FROM tasklane.turn_points x
          JOIN reached y ON y.task_type = x.task_type AND y.priority = x.priority
          WHERE x.turn < y.turn
          FOR UPDATE OF x SKIP LOCKED)
)
SELECT c.id, c.app, c.scope_id, c.task_type, c.attempt, c.max_attempts, c.lease_token,
       c.lease_expires_at, c.lease_seconds, c.attempt_timeout_seconds, c.input, c.snapshot,
       c.deadline_at, c.privacy, c.run_at AS claimable_at, c.traceparent,
       c.attempt_deadline_at
FROM claimed c
JOIN picked k ON k.id = c.id
LEFT JOIN written ON true
-- In claim order, as the worker protocol promises (an UPDATE returns its rows in the
-- order its plan met them).
ORDER BY k.priority DESC, k.rel, k.run_at, k.id;
END
$claim$;

CREATE OR REPLACE FUNCTION tasklane.claim_fallback_plain(p_task_types text[], p_worker_id text, p_limit bigint, p_replica_id uuid, p_app text, p_scope_id text)
RETURNS TABLE(id uuid, app text, scope_id text, task_type text, attempt integer,
              max_attempts integer, lease_token uuid,
              lease_expires_at timestamp with time zone, lease_seconds integer,
              attempt_timeout_seconds integer, input jsonb, snapshot jsonb,
              deadline_at timestamp with time zone, privacy text,
              claimable_at timestamp with time zone, traceparent text,
              attempt_deadline_at timestamp with time zone)
LANGUAGE plpgsql
SET plan_cache_mode TO 'force_generic_plan'
SET enable_bitmapscan TO 'off'
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
-- it took (an unlogged row, skipped when another claim holds it; the first claim of a
-- type and priority creates it under a transaction advisory lock it only tries).
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
    -- The claimed tasks' mirror rows, written here with one primary-key probe each:
    -- the update trigger would compare each row again and upsert it. Found by
    -- `q.id = ANY (ids)` alone, not joined to `claimed`: the mirror holds only live
    -- tasks, so once analyzed its statistics say it is small, and the planner then
    -- hashes a scan of its whole primary key into the join. Under a snapshot held open
    -- that scan walks the entry of every task claimed since the snapshot, which vacuum
    -- may not remove: each claim's cost would grow with them. The lease's end comes from
    -- the array beside the ids (a search of at most a claim's length, in C).
    UPDATE tasklane.task_queue q
    SET state = 'running', lease_expires_at = a.leases[array_position(a.ids, q.id)]
    FROM (SELECT array_agg(c.id) AS ids, array_agg(c.lease_expires_at) AS leases FROM claimed c) a
    WHERE q.id = ANY (a.ids)
    RETURNING q.id
), written AS (
    -- The setting tells the trigger this statement wrote them; it is set only when a
    -- row was, so only when tasks were updated and the trigger fires to consume it.
    -- Once a statement (the answer joins it): set for each row, it would cost every
    -- row a function call.
    SELECT set_config('tasklane.queue_written', 'on', true) AS written
    WHERE EXISTS (SELECT 1 FROM mirrored)
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
), started AS (
    INSERT INTO tasklane.turn_points (task_type, priority, turn)
    SELECT r.task_type, r.priority, r.turn
    FROM reached r
    WHERE NOT EXISTS (SELECT 1 FROM tasklane.turn_points p
                      WHERE p.task_type = r.task_type AND p.priority = r.priority)
      -- One claim creates a point; another one creating it at the same time goes on
      -- without it (ON CONFLICT alone would wait for that claim to commit). The class
      -- 0x746c7470 is this lock's alone.
      AND pg_try_advisory_xact_lock(1953264752, hashtext(r.task_type || '/' || r.priority))
    ON CONFLICT DO NOTHING
), advanced AS (
    -- A point another claim holds is skipped, never waited for: that claim raises it too.
    UPDATE tasklane.turn_points p
    SET turn = r.turn
    FROM reached r
    WHERE p.task_type = r.task_type AND p.priority = r.priority AND p.turn < r.turn
      AND (p.task_type, p.priority) IN (
          SELECT x.task_type, x.priority
          FROM tasklane.turn_points x
          JOIN reached y ON y.task_type = x.task_type AND y.priority = x.priority
          WHERE x.turn < y.turn
          FOR UPDATE OF x SKIP LOCKED)
)
SELECT c.id, c.app, c.scope_id, c.task_type, c.attempt, c.max_attempts, c.lease_token,
       c.lease_expires_at, c.lease_seconds, c.attempt_timeout_seconds, c.input, c.snapshot,
       c.deadline_at, c.privacy, c.run_at AS claimable_at, c.traceparent,
       c.attempt_deadline_at
FROM claimed c
JOIN picked k ON k.id = c.id
LEFT JOIN written ON true
-- In claim order, as the worker protocol promises (an UPDATE returns its rows in the
-- order its plan met them).
ORDER BY k.priority DESC, k.rel, k.run_at, k.id;
END
$claim$;

CREATE OR REPLACE FUNCTION tasklane.complete_tasks_claiming(p_id uuid[], p_lease_token uuid[], p_result jsonb[], p_usage_units bigint[], p_provider text[], p_model text[], p_route text[], p_route_name text[], p_input_tokens bigint[], p_output_tokens bigint[], p_total_tokens bigint[], p_claim_token uuid, p_claim_seconds double precision, p_busy uuid[]) RETURNS TABLE(id uuid, lease_token uuid, delivery_id uuid, endpoint_id uuid, created_at timestamp with time zone)
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
-- transition: Succeed by lease
--   (a task holds a lease token only while running or cancelling: V17's CHECK)
-- Settles a batch of leased tasks as succeeded in one statement, each fenced on its own
-- lease token, as tasklane.complete_tasks (V26, V27 say why each part has its shape),
-- and claims the notifications it writes for the caller's deliverer (V31). A first
-- attempt's event data is a constant, its attempt row a plain insert and the mirror
-- trigger's setting set once (V32).
    WITH input AS (
        SELECT *
        FROM unnest(p_id, p_lease_token, p_result, p_usage_units, p_provider, p_model,
                    p_route, p_route_name, p_input_tokens, p_output_tokens, p_total_tokens)
            AS i(id, lease_token, result, usage_units, provider, model, route, route_name,
                 input_tokens, output_tokens, total_tokens)
    ), done AS (
        UPDATE tasklane.tasks t
        SET state = 'succeeded', result = i.result, provider = i.provider, model = i.model,
            finished_at = now(), lease_token = NULL, lease_expires_at = NULL,
            error_code = NULL, error_message = NULL, snapshot = NULL,
            event_seq = t.event_seq + 1
        FROM input i
        WHERE t.id = ANY(p_id) AND t.id = i.id AND t.lease_token = i.lease_token
        RETURNING t.id, i.lease_token, t.event_seq, t.attempt, t.finished_at, t.app,
                  t.usage_subject, t.attempts_before, t.worker_id, t.replica_id,
                  t.attempt_started_at, coalesce(t.route, i.route) AS route, i.route_name,
                  i.provider, i.model, i.input_tokens, i.output_tokens, i.total_tokens,
                  coalesce(i.usage_units, i.total_tokens) AS units, t.scope_id
    ), dequeued AS (
        -- By `q.id = ANY (ids)` alone, not joined to `done`: a join may be planned as a
        -- hash of the mirror's whole primary key, whose dead entries a held snapshot
        -- keeps.
        DELETE FROM tasklane.task_queue q
        WHERE q.id = ANY (ARRAY(SELECT d.id FROM done d))
        RETURNING q.id
    ), written AS (
        -- The mirror trigger's setting, once a statement (the answer joins it).
        SELECT set_config('tasklane.queue_written', 'on', true) AS written
        WHERE EXISTS (SELECT 1 FROM dequeued)
    ), notified AS (
        -- One notification per subscribed, enabled endpoint of the task's app, claimed
        -- for the caller unless it passed no token or the endpoint is busy there.
        INSERT INTO tasklane.webhook_deliveries
            (endpoint_id, app, scope_id, task_id, event, created_at, attempts, claim_token,
             claimed_until)
        SELECT e.id, d.app, d.scope_id, d.id, 'task.succeeded', d.finished_at,
               c.claimed::int,
               CASE WHEN c.claimed THEN p_claim_token END,
               CASE WHEN c.claimed THEN now() + p_claim_seconds * interval '1 second' END
        FROM done d
        JOIN tasklane.webhook_endpoints e
          ON e.app = d.app AND NOT e.disabled AND 'task.succeeded' = ANY (e.events)
        CROSS JOIN LATERAL (
            SELECT coalesce(p_claim_token IS NOT NULL AND e.id <> ALL (p_busy), false)
                AS claimed
        ) c
        RETURNING webhook_deliveries.id, webhook_deliveries.task_id,
                  webhook_deliveries.endpoint_id, webhook_deliveries.created_at,
                  webhook_deliveries.claim_token,
                  CASE WHEN webhook_deliveries.claim_token IS NULL
                       THEN pg_notify('tasklane_webhooks', '') END AS woke
    ), event AS (
        INSERT INTO tasklane.task_events (task_id, seq, type, data, at)
        SELECT id, event_seq, 'task.succeeded',
               CASE WHEN attempt = 1 THEN '{"attempt": 1}'::jsonb
                    ELSE jsonb_build_object('attempt', attempt) END,
               finished_at
        FROM done
    ), attempt AS (
        INSERT INTO tasklane.task_attempts
            (task_id, attempt, route, route_name, provider, model, worker_id, replica_id,
             started_at, finished_at, outcome, input_tokens, output_tokens, total_tokens,
             usage_units)
        SELECT id, attempts_before + attempt, route, route_name, provider, model, worker_id,
               replica_id, coalesce(attempt_started_at, finished_at), finished_at, 'succeeded',
               input_tokens, output_tokens, total_tokens, units
        FROM done
    ), charge AS (
        INSERT INTO tasklane.budget_usage AS u (app, usage_subject, day, stripe, units)
        SELECT app, coalesce(usage_subject, ''), (now() AT TIME ZONE 'UTC')::date,
               floor(random() * 8)::smallint, sum(units)::int8
        FROM done
        WHERE units > 0
        GROUP BY app, coalesce(usage_subject, '')
        ORDER BY app, coalesce(usage_subject, '')
        ON CONFLICT (app, usage_subject, day, stripe) DO UPDATE SET units = u.units + excluded.units
    )
    SELECT d.id, d.lease_token, NULL::uuid, NULL::uuid, NULL::timestamptz
    FROM done d LEFT JOIN written ON true
    UNION ALL
    SELECT n.task_id, NULL::uuid, n.id, n.endpoint_id, n.created_at
    FROM notified n
    WHERE n.claim_token IS NOT NULL;
END
$$;

CREATE OR REPLACE FUNCTION tasklane.complete_tasks_claiming(p_id uuid[], p_lease_token uuid[], p_result jsonb[], p_usage_units bigint[], p_provider text[], p_model text[], p_route text[], p_route_name text[], p_input_tokens bigint[], p_output_tokens bigint[], p_total_tokens bigint[], p_response_model text[], p_system_fingerprint text[], p_claim_token uuid, p_claim_seconds double precision, p_busy uuid[]) RETURNS TABLE(id uuid, lease_token uuid, delivery_id uuid, endpoint_id uuid, created_at timestamp with time zone)
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
-- transition: Succeed by lease
--   (a task holds a lease token only while running or cancelling: V17's CHECK)
-- Settles a batch of leased tasks as succeeded in one statement, each fenced on its own
-- lease token, as the 14-argument overload does (V26, V27, V31, V32 say why each part
-- has its shape), and records the model the provider says answered and its system
-- fingerprint with each attempt row (V36).
    WITH input AS (
        SELECT *
        FROM unnest(p_id, p_lease_token, p_result, p_usage_units, p_provider, p_model,
                    p_route, p_route_name, p_input_tokens, p_output_tokens, p_total_tokens,
                    p_response_model, p_system_fingerprint)
            AS i(id, lease_token, result, usage_units, provider, model, route, route_name,
                 input_tokens, output_tokens, total_tokens, response_model,
                 system_fingerprint)
    ), done AS (
        UPDATE tasklane.tasks t
        SET state = 'succeeded', result = i.result, provider = i.provider, model = i.model,
            finished_at = now(), lease_token = NULL, lease_expires_at = NULL,
            error_code = NULL, error_message = NULL, snapshot = NULL,
            event_seq = t.event_seq + 1
        FROM input i
        WHERE t.id = ANY(p_id) AND t.id = i.id AND t.lease_token = i.lease_token
        RETURNING t.id, i.lease_token, t.event_seq, t.attempt, t.finished_at, t.app,
                  t.usage_subject, t.attempts_before, t.worker_id, t.replica_id,
                  t.attempt_started_at, coalesce(t.route, i.route) AS route, i.route_name,
                  i.provider, i.model, i.input_tokens, i.output_tokens, i.total_tokens,
                  coalesce(i.usage_units, i.total_tokens) AS units, t.scope_id,
                  i.response_model, i.system_fingerprint
    ), dequeued AS (
        -- By `q.id = ANY (ids)` alone, not joined to `done`: a join may be planned as a
        -- hash of the mirror's whole primary key, whose dead entries a held snapshot
        -- keeps.
        DELETE FROM tasklane.task_queue q
        WHERE q.id = ANY (ARRAY(SELECT d.id FROM done d))
        RETURNING q.id
    ), written AS (
        -- The mirror trigger's setting, once a statement (the answer joins it).
        SELECT set_config('tasklane.queue_written', 'on', true) AS written
        WHERE EXISTS (SELECT 1 FROM dequeued)
    ), notified AS (
        -- One notification per subscribed, enabled endpoint of the task's app, claimed
        -- for the caller unless it passed no token or the endpoint is busy there.
        INSERT INTO tasklane.webhook_deliveries
            (endpoint_id, app, scope_id, task_id, event, created_at, attempts, claim_token,
             claimed_until)
        SELECT e.id, d.app, d.scope_id, d.id, 'task.succeeded', d.finished_at,
               c.claimed::int,
               CASE WHEN c.claimed THEN p_claim_token END,
               CASE WHEN c.claimed THEN now() + p_claim_seconds * interval '1 second' END
        FROM done d
        JOIN tasklane.webhook_endpoints e
          ON e.app = d.app AND NOT e.disabled AND 'task.succeeded' = ANY (e.events)
        CROSS JOIN LATERAL (
            SELECT coalesce(p_claim_token IS NOT NULL AND e.id <> ALL (p_busy), false)
                AS claimed
        ) c
        RETURNING webhook_deliveries.id, webhook_deliveries.task_id,
                  webhook_deliveries.endpoint_id, webhook_deliveries.created_at,
                  webhook_deliveries.claim_token,
                  CASE WHEN webhook_deliveries.claim_token IS NULL
                       THEN pg_notify('tasklane_webhooks', '') END AS woke
    ), event AS (
        INSERT INTO tasklane.task_events (task_id, seq, type, data, at)
        SELECT id, event_seq, 'task.succeeded',
               CASE WHEN attempt = 1 THEN '{"attempt": 1}'::jsonb
                    ELSE jsonb_build_object('attempt', attempt) END,
               finished_at
        FROM done
    ), attempt AS (
        INSERT INTO tasklane.task_attempts
            (task_id, attempt, route, route_name, provider, model, worker_id, replica_id,
             started_at, finished_at, outcome, input_tokens, output_tokens, total_tokens,
             usage_units, response_model, system_fingerprint)
        SELECT id, attempts_before + attempt, route, route_name, provider, model, worker_id,
               replica_id, coalesce(attempt_started_at, finished_at), finished_at, 'succeeded',
               input_tokens, output_tokens, total_tokens, units, response_model,
               system_fingerprint
        FROM done
    ), charge AS (
        INSERT INTO tasklane.budget_usage AS u (app, usage_subject, day, stripe, units)
        SELECT app, coalesce(usage_subject, ''), (now() AT TIME ZONE 'UTC')::date,
               floor(random() * 8)::smallint, sum(units)::int8
        FROM done
        WHERE units > 0
        GROUP BY app, coalesce(usage_subject, '')
        ORDER BY app, coalesce(usage_subject, '')
        ON CONFLICT (app, usage_subject, day, stripe) DO UPDATE SET units = u.units + excluded.units
    )
    SELECT d.id, d.lease_token, NULL::uuid, NULL::uuid, NULL::timestamptz
    FROM done d LEFT JOIN written ON true
    UNION ALL
    SELECT n.task_id, NULL::uuid, n.id, n.endpoint_id, n.created_at
    FROM notified n
    WHERE n.claim_token IS NOT NULL;
END
$$;

ALTER FUNCTION tasklane.take_turns(uuid[], text[], smallint[], text[], text[]) SET enable_seqscan TO 'off';
ALTER FUNCTION tasklane.active_subjects(text, smallint, text, integer) SET enable_seqscan TO 'off';

CREATE OR REPLACE FUNCTION tasklane.sync_task_queue() RETURNS trigger
    LANGUAGE plpgsql
    SET enable_seqscan TO 'off'
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
    claimable_ids := ARRAY(SELECT o.id FROM tasklane.task_queue o
                           WHERE o.id = ANY (fresh_ids)
                             AND o.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback'));
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
