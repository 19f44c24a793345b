-- transition: Requeue, Fail, AckCancel
--   except queued, waiting_for_retry, waiting_for_external_fallback
--   (only a leased task has a worker to lose)
-- transition: Fail only queued (a cold start fails the queued tasks of policy fail)
-- At a cold start (no other live replica): every task leased by a replica process, and
-- every queued task, whatever its lease says. Tasks leased by remote workers are left to
-- their lease. $1 limit, $2 the starting replica (its own claims are not lost).
-- Locks: the rows FOR UPDATE SKIP LOCKED.
SELECT id, state, on_restart, attempt, max_attempts
FROM tasklane.tasks
WHERE (state IN ('running', 'cancelling') AND replica_id IS NOT NULL AND replica_id <> $2)
   OR (state = 'queued' AND on_restart = 'fail')
LIMIT $1
FOR UPDATE SKIP LOCKED
