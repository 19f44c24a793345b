-- transition: Requeue, Fail, AckCancel
--   except queued, waiting_for_retry, waiting_for_external_fallback
--   (only a leased task has a worker to lose)
-- transition: Fail only queued (a cold start fails the queued tasks of policy fail)
-- At a cold start (no other live replica): every task leased by a replica process, and
-- every queued task, whatever its lease says. Tasks leased by remote workers are left to
-- their lease. $1 limit, $2 the starting replica (its own claims are not lost).
-- Locks: the rows FOR UPDATE SKIP LOCKED.
-- Reads the mirror (live tasks only), never the finished history.
SELECT t.id, t.state, t.on_restart, t.attempt, t.max_attempts
FROM tasklane.task_queue q
JOIN tasklane.tasks t ON t.id = q.id
WHERE ((t.state IN ('running', 'cancelling') AND t.replica_id IS NOT NULL AND t.replica_id <> $2)
       OR (t.state = 'queued' AND t.on_restart = 'fail'))
LIMIT $1
FOR UPDATE OF t SKIP LOCKED
