-- transition: Requeue, Fail, AckCancel
--   except queued, waiting_for_retry, waiting_for_external_fallback
--   (only a leased task has a worker to lose)
-- Leased tasks whose lease has expired: their worker is presumed dead. Attempts past
-- their deadline (whose lease ends with it) are left to the attempt-deadline sweep
-- (attempt_overdue.sql), which times them out instead.
-- $1 limit. Locks: the rows FOR UPDATE SKIP LOCKED (another rescuer takes the others).
SELECT id, state, on_restart, attempt, max_attempts
FROM tasklane.tasks
WHERE state IN ('running', 'cancelling') AND lease_expires_at < now()
  AND (attempt_deadline_at IS NULL OR attempt_deadline_at > now())
ORDER BY lease_expires_at
LIMIT $1
FOR UPDATE SKIP LOCKED
