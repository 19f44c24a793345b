-- Claims up to $3 tasks for a local worker: queued and retrying tasks of any privacy. One statement: the SKIP LOCKED selection
-- sits in a CTE so LIMIT bounds what is updated. Each claim gets a fresh random lease
-- token, counts an attempt and writes its task.running event.
-- $1 task_types text[], $2 worker_id, $3 limit, $4 replica_id (nullable: remote worker),
-- $5 app, $6 scope_id (each nullable: any; remote workers claim only their token's tasks).
-- The variant for claimers none of whose task types names a resource (see
-- claim_local.sql for the resource-aware one): tasks holding a resource are left to
-- resource-aware claimers, so this stays as cheap as a claim without resources.
-- Locks: the claimed rows (FOR UPDATE SKIP LOCKED: never waits on another claimer).
WITH picked AS (
    SELECT id
    FROM tasklane.tasks
    WHERE state IN ('queued', 'waiting_for_retry')
      AND run_at <= now()
      AND task_type = ANY($1)
      AND ($5::text IS NULL OR app = $5)
      AND ($6::text IS NULL OR scope_id = $6)
      AND (deadline_at IS NULL OR deadline_at > now())
      AND resource IS NULL
    ORDER BY priority DESC, run_at, id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
), claimed AS (
    UPDATE tasklane.tasks t
    SET state = 'running',
        attempt = t.attempt + 1,
        lease_token = gen_random_uuid(),
        lease_expires_at = now() + t.lease_seconds * interval '1 second',
        worker_id = $2,
        replica_id = $4,
        route = 'local',
        started_at = coalesce(t.started_at, now()),
        phase = NULL,
        progress = CASE WHEN t.snapshot IS NULL THEN NULL ELSE t.progress END,
        event_seq = t.event_seq + 1
    FROM picked
    WHERE t.id = picked.id
    RETURNING t.id, t.app, t.scope_id, t.task_type, t.attempt, t.max_attempts, t.lease_token,
              t.lease_expires_at, t.lease_seconds, t.attempt_timeout_seconds, t.input,
              t.snapshot, t.deadline_at, t.privacy, t.event_seq
), events AS (
    INSERT INTO tasklane.task_events (task_id, seq, type, data)
    SELECT id, event_seq, 'task.running', jsonb_build_object('attempt', attempt, 'route', 'local')
    FROM claimed
)
SELECT id, app, scope_id, task_type, attempt, max_attempts, lease_token, lease_expires_at,
       lease_seconds, attempt_timeout_seconds, input, snapshot, deadline_at, privacy
FROM claimed
