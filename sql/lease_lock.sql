-- transition: RetryLater, Fail, Fallback, AckCancel
--   except queued, waiting_for_retry, waiting_for_external_fallback
--   (locks the lease that settle.sql ends)
-- Reads and locks a leased task so its settlement can be decided in Rust.
-- $1 id, $2 lease_token. Returns no row when the lease is lost or the task gone;
-- `overdue` when the attempt is past its deadline (it then ends as timed out, whatever
-- the worker reports).
-- Locks: the task row FOR UPDATE until the transaction ends.
SELECT state, attempt, max_attempts, privacy, route, task_type,
       coalesce(attempt_deadline_at <= now(), false) AS overdue
FROM tasklane.tasks
WHERE id = $1 AND lease_token = $2 AND state IN ('running', 'cancelling')
FOR UPDATE
