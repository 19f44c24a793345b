-- transition: Requeue, Fail, AckCancel
--   except queued, waiting_for_retry, waiting_for_external_fallback
--   (only a leased task has a worker to lose)
-- Leased tasks whose lease has expired: their worker is presumed dead. Attempts past
-- their deadline (whose lease ends with it) are left to the attempt-deadline sweep
-- (attempt_overdue.sql), which times them out instead.
-- $1 limit. Locks: the rows FOR UPDATE SKIP LOCKED (another rescuer takes the others).
-- Found through the mirror's index task_queue_leased; rechecked on the locked task row
-- (a heartbeat may have extended the lease since the snapshot).
SELECT t.id, t.state, t.on_restart, t.attempt, t.max_attempts
FROM tasklane.task_queue q
JOIN tasklane.tasks t ON t.id = q.id
WHERE q.state IN ('running', 'cancelling') AND q.lease_expires_at < now()
  AND t.state IN ('running', 'cancelling') AND t.lease_expires_at < now()
  AND (t.attempt_deadline_at IS NULL OR t.attempt_deadline_at > now())
ORDER BY q.lease_expires_at
LIMIT $1
FOR UPDATE OF t SKIP LOCKED
