-- transition: Requeue, Fail, AckCancel
--   via lost_expired.sql, lost_handback.sql, lost_cold_start.sql
-- Applies restart-policy decisions (task::restart) to tasks locked by one of the lost_*
-- statements in this transaction: each row's new state, code and whether it keeps its
-- snapshot. Requeued tasks are claimable at once; every move writes its event, and every
-- leased task's attempt ends with a row of outcome `lost` (its worker's facts are gone
-- with it).
-- $1 ids uuid[], $2 states text[], $3 codes text[] (nullable items),
-- $4 keep_snapshot bool[], $5 the lost attempts' error code (lease_expired,
-- server_restarted). Locks: the rows (already held).
WITH decided AS (
    SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bool[])
        AS d(id, state, code, keep_snapshot)
), held AS (
    -- The attempts these moves end, read as they were before the update (every part of
    -- one statement sees one snapshot): the leased tasks' (only a lease holds a token);
    -- a queued task a cold start fails has none.
    SELECT t.id, t.attempts_before + t.attempt AS attempt, t.route, t.worker_id,
           t.replica_id, coalesce(t.attempt_started_at, t.started_at, now()) AS started_at
    FROM tasklane.tasks t JOIN decided d ON d.id = t.id
    WHERE t.lease_token IS NOT NULL
), moved AS (
    UPDATE tasklane.tasks t
    SET state = d.state,
        error_code = CASE WHEN d.state = 'queued' THEN NULL ELSE d.code END,
        error_message = NULL,
        run_at = now(),
        finished_at = CASE WHEN d.state IN ('failed', 'cancelled') THEN now() END,
        lease_token = NULL, lease_expires_at = NULL, worker_id = NULL, replica_id = NULL,
        snapshot = CASE WHEN d.keep_snapshot THEN t.snapshot END,
        event_seq = t.event_seq + 1
    FROM decided d
    WHERE t.id = d.id
    RETURNING t.id, t.event_seq, t.state, t.attempt, d.code
), events AS (
    INSERT INTO tasklane.task_events (task_id, seq, type, data)
    SELECT id, event_seq, 'task.' || state,
           jsonb_strip_nulls(jsonb_build_object('attempt', attempt, 'code', code))
    FROM moved
), attempts AS (
    INSERT INTO tasklane.task_attempts
        (task_id, attempt, route, worker_id, replica_id, started_at, finished_at, outcome,
         error_code)
    SELECT h.id, h.attempt, h.route, h.worker_id, h.replica_id, h.started_at, now(), 'lost',
           $5::text
    FROM held h JOIN moved m ON m.id = h.id
    ON CONFLICT (task_id, attempt) DO NOTHING
)
SELECT count(*) FROM moved
