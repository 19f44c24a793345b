-- Leased attempts past their server-side deadline (claim time + attempt timeout), for
-- the attempt-deadline sweep, which settles each as timed out through settle.sql
-- (fenced on the lease token it reads here). Their lease ended with the deadline, so
-- the leased index of the mirror (task_queue_leased) finds them. Attempts of replica processes get
-- $2 seconds of grace: their own timer ends them first and keeps the handler's
-- provenance and usage; remote workers' attempts are taken at once.
-- $1 limit, $2 grace seconds (float8), $3 where the last sweep found nothing more (its
-- clock; nullable: from the start). Locks: none (settle.sql locks and re-checks).
-- The scan starts a grace before $3 (an attempt within its grace was left then): the
-- index keeps an entry for every lease extended or ended while an older snapshot is
-- open (a long pg_dump, a forgotten transaction), and a sweep from the start would step
-- over all of them.
SELECT t.id, t.lease_token, t.task_type
FROM tasklane.task_queue q
JOIN tasklane.tasks t ON t.id = q.id
WHERE q.state IN ('running', 'cancelling') AND q.lease_expires_at <= now()
  AND q.lease_expires_at >= coalesce($3::timestamptz, '-infinity') - $2::float8 * interval '1 second'
  AND t.state IN ('running', 'cancelling') AND t.lease_expires_at <= now()
  AND t.attempt_deadline_at <= now() - CASE WHEN t.replica_id IS NULL THEN 0
                                            ELSE $2::float8 END * interval '1 second'
ORDER BY q.lease_expires_at
LIMIT $1
