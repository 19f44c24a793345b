-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.claim_external, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The claim of an external worker (tasks whose privacy is external_allowed, those waiting for an external fallback included), resource-aware: sql/claim.sql rendered for the external route with resource slots. Called by replicas whose database URL goes through a pooler in transaction mode
-- (src/store/claim.rs); a replica connected directly runs the same statement prepared on
-- its claim pool. The body is the rendered statement verbatim, its $1..$6 the arguments
-- (task types, worker id, limit, replica id or NULL, app and scope or NULL). It is planned
-- once per server session, generically and without bitmap scans (the SET clauses, which
-- also reach the triggers it fires), as the claim pool's sessions plan it.
-- Locks: those of the rendered statement (its Locks header).
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function claim_external: migrations/V44__claim_functions.sql, migrations/V47__held_snapshot_plans.sql, migrations/V53__claim_mirror_without_scans.sql, migrations/V54__claims_point_read_from_its_top.sql, migrations/V56__floors_read_from_their_top.sql
CREATE FUNCTION tasklane.claim_external(p_task_types text[], p_worker_id text, p_limit bigint, p_replica_id uuid, p_app text, p_scope_id text) RETURNS TABLE(id uuid, app text, scope_id text, task_type text, attempt integer, max_attempts integer, lease_token uuid, lease_expires_at timestamp with time zone, lease_seconds integer, attempt_timeout_seconds integer, input jsonb, snapshot jsonb, deadline_at timestamp with time zone, privacy text, claimable_at timestamp with time zone, traceparent text, attempt_deadline_at timestamp with time zone)
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_bitmapscan TO 'off'
    SET jit TO 'off'
    AS $_$
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
$_$;
