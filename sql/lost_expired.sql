-- transition: Requeue, Fail, AckCancel
--   except queued, waiting_for_retry, waiting_for_external_fallback
--   (only a leased task has a worker to lose)
-- Leased tasks whose lease has expired: their worker is presumed dead. Attempts past
-- their deadline (whose lease ends with it) are left to the attempt-deadline sweep
-- (attempt_overdue.sql), which times them out instead.
-- $1 limit, $2 the least lease end to consider (nullable: from the start). Locks: the
-- rows FOR UPDATE SKIP LOCKED (another rescuer takes the others).
-- Found through the mirror's index task_queue_leased; rechecked on the locked task row
-- (a heartbeat may have extended the lease since the snapshot). The scan starts at $2,
-- where the last sweep found nothing more: the index keeps an entry for every lease
-- extended or ended while an older snapshot is open (a long pg_dump, a forgotten
-- transaction), and a sweep from the start would step over all of them.
SELECT t.id, t.state, t.on_restart, t.attempt, t.max_attempts
FROM tasklane.task_queue q
JOIN tasklane.tasks t ON t.id = q.id
WHERE q.state IN ('running', 'cancelling') AND q.lease_expires_at < now()
  AND q.lease_expires_at >= coalesce($2::timestamptz, '-infinity')
  AND t.state IN ('running', 'cancelling') AND t.lease_expires_at < now()
  AND (t.attempt_deadline_at IS NULL OR t.attempt_deadline_at > now())
ORDER BY q.lease_expires_at
LIMIT $1
FOR UPDATE OF t SKIP LOCKED
