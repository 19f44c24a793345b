-- transition: RetryLater, Fail, Fallback, AckCancel
--   except queued, waiting_for_retry, waiting_for_external_fallback
--   (locks the lease that settle.sql ends)
-- Reads and locks a leased task so its settlement can be decided in Rust.
-- $1 id, $2 lease_token. Returns no row when the lease is lost or the task gone;
-- `overdue` when the attempt is past its deadline (it then ends as timed out, whatever
-- the worker reports); `circuit_waited` the seconds since the task's first deferral in
-- a row (0 when it is not waiting for circuits).
-- Locks: the task row FOR UPDATE until the transaction ends.
SELECT state, attempt, max_attempts, privacy, route, task_type,
       coalesce(attempt_deadline_at <= now(), false) AS overdue,
       coalesce(extract(epoch FROM now() - circuit_wait_since), 0)::float8 AS circuit_waited
FROM tasklane.tasks
WHERE id = $1 AND lease_token = $2 AND state IN ('running', 'cancelling')
FOR UPDATE
