-- transition: Requeue, Fail, AckCancel
--   via lost_expired.sql, lost_handback.sql, lost_cold_start.sql
-- Applies restart-policy decisions (task::restart) to tasks locked by one of the lost_*
-- statements in this transaction: each row's new state, code and whether it keeps its
-- snapshot. Requeued tasks are claimable at once; every move writes its event.
-- $1 ids uuid[], $2 states text[], $3 codes text[] (nullable items),
-- $4 keep_snapshot bool[]. Locks: the rows (already held).
WITH decided AS (
    SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bool[])
        AS d(id, state, code, keep_snapshot)
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
)
SELECT count(*) FROM moved
