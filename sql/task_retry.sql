-- transition: Retry
-- The owner's retry: a failed or cancelled task is queued again with a fresh attempt
-- budget (attempt back to 0; attempts_before keeps the attempt rows' numbering going),
-- a fresh queue deadline of the same length, and no trace of the last run but its events
-- and attempt rows. Writes its task.queued event.
-- $1 id, $2 app, $3 scope_id (nullable: any scope of the app).
-- Returns the task id when it moved; no row when it is absent or not retryable.
-- Locks: the task row.
WITH moved AS (
    UPDATE tasklane.tasks t
    SET state = 'queued', attempt = 0, attempts_before = t.attempts_before + t.attempt,
        run_at = now(),
        deadline_at = CASE WHEN t.deadline_at IS NULL THEN NULL
                           ELSE now() + (t.deadline_at - t.created_at) END,
        started_at = NULL, finished_at = NULL, result = NULL,
        error_code = NULL, error_message = NULL, usage_units = NULL,
        provider = NULL, model = NULL, route = NULL,
        lease_token = NULL, lease_expires_at = NULL, worker_id = NULL, replica_id = NULL,
        progress = NULL, phase = NULL, snapshot = NULL, circuit_wait_since = NULL,
        event_seq = t.event_seq + 1
    WHERE t.id = $1 AND t.app = $2 AND ($3::text IS NULL OR t.scope_id = $3)
      AND t.state IN ('failed', 'cancelled')
    RETURNING t.id, t.event_seq
), event AS (
    INSERT INTO tasklane.task_events (task_id, seq, type, data)
    SELECT id, event_seq, 'task.queued', jsonb_build_object('attempt', 0, 'retry', true)
    FROM moved
)
SELECT id FROM moved
