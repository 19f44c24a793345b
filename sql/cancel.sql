-- transition: Cancel
-- The owner's cancel: a waiting task is cancelled at once; a running one is marked
-- cancelling (its worker sees it at the next heartbeat); anything else is unchanged.
-- Row locking makes a race with the worker's settlement have exactly one winner.
-- $1 id, $2 app, $3 scope_id (nullable: any scope of the app).
-- Returns the new state, or no row when nothing changed. Locks: the task row.
WITH moved AS (
    UPDATE tasklane.tasks t
    SET state = CASE WHEN t.state = 'running' THEN 'cancelling' ELSE 'cancelled' END,
        finished_at = CASE WHEN t.state = 'running' THEN NULL ELSE now() END,
        event_seq = t.event_seq + 1
    WHERE t.id = $1 AND t.app = $2 AND ($3::text IS NULL OR t.scope_id = $3)
      AND t.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback', 'running')
    RETURNING t.id, t.event_seq, t.state, t.attempt
), event AS (
    INSERT INTO tasklane.task_events (task_id, seq, type, data)
    SELECT id, event_seq, 'task.' || state, jsonb_build_object('attempt', attempt) FROM moved
)
SELECT state FROM moved
