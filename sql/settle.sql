-- transition: RetryLater, Fail, Fallback, AckCancel
--   except queued, waiting_for_retry, waiting_for_external_fallback
--   (ends an attempt: only a leased task has one, task::outcome refuses the rest)
-- Moves a leased task (locked by lease_lock.sql in this transaction) to the state
-- decided by task::outcome, ending its lease, with its event.
-- $1 id, $2 lease_token, $3 new state, $4 error_code (nullable), $5 error_message
-- (nullable), $6 retry delay in ms (nullable: claimable now).
-- Locks: the task row (already held).
WITH moved AS (
    UPDATE tasklane.tasks t
    SET state = $3, error_code = $4, error_message = $5,
        run_at = now() + coalesce($6::bigint, 0) * interval '1 millisecond',
        finished_at = CASE WHEN $3 IN ('succeeded', 'failed', 'cancelled') THEN now() END,
        lease_token = NULL, lease_expires_at = NULL, snapshot = NULL,
        event_seq = t.event_seq + 1
    WHERE t.id = $1 AND t.lease_token = $2 AND t.state IN ('running', 'cancelling')
    RETURNING t.id, t.event_seq, t.state, t.attempt, t.error_code
), event AS (
    INSERT INTO tasklane.task_events (task_id, seq, type, data)
    SELECT id, event_seq, 'task.' || state,
           jsonb_strip_nulls(jsonb_build_object('attempt', attempt, 'code', error_code))
    FROM moved
)
SELECT state FROM moved
