-- Leased attempts past their server-side deadline (claim time + attempt timeout), for
-- the attempt-deadline sweep, which settles each as timed out through settle.sql
-- (fenced on the lease token it reads here). Their lease ended with the deadline, so
-- the leased index on lease_expires_at finds them. Attempts of replica processes get
-- $2 seconds of grace: their own timer ends them first and keeps the handler's
-- provenance and usage; remote workers' attempts are taken at once.
-- $1 limit, $2 grace seconds (float8). Locks: none (settle.sql locks and re-checks).
SELECT id, lease_token, task_type
FROM tasklane.tasks
WHERE state IN ('running', 'cancelling') AND lease_expires_at <= now()
  AND attempt_deadline_at <= now() - CASE WHEN replica_id IS NULL THEN 0
                                          ELSE $2::float8 END * interval '1 second'
ORDER BY lease_expires_at
LIMIT $1
