-- transition: Succeed
-- Settles a leased task as succeeded, fenced on its lease token, with its event.
-- A task being cancelled may still succeed: the work is done.
-- $1 id, $2 lease_token, $3 result jsonb, $4 usage_units (nullable), $5 provider,
-- $6 model (nullable).
-- Returns no row when the lease is lost or the task gone. Locks: the task row.
WITH done AS (
    UPDATE tasklane.tasks t
    SET state = 'succeeded', result = $3, usage_units = $4, provider = $5, model = $6,
        finished_at = now(), lease_token = NULL, lease_expires_at = NULL,
        error_code = NULL, error_message = NULL, snapshot = NULL,
        event_seq = t.event_seq + 1
    WHERE t.id = $1 AND t.lease_token = $2 AND t.state IN ('running', 'cancelling')
    RETURNING t.id, t.event_seq, t.attempt, t.finished_at
), event AS (
    INSERT INTO tasklane.task_events (task_id, seq, type, data, at)
    SELECT id, event_seq, 'task.succeeded', jsonb_build_object('attempt', attempt), finished_at
    FROM done
)
SELECT id FROM done
