-- transition: Requeue, Fail, AckCancel
--   except queued, waiting_for_retry, waiting_for_external_fallback
--   (only a leased task has a worker to lose)
-- Tasks a replica hands back at shutdown: its own leases, fenced on their tokens.
-- $1 ids uuid[], $2 lease_tokens uuid[] (same order).
-- Locks: the rows FOR UPDATE.
SELECT t.id, t.state, t.on_restart, t.attempt, t.max_attempts
FROM tasklane.tasks t
JOIN unnest($1::uuid[], $2::uuid[]) AS h(id, lease_token)
  ON t.id = h.id AND t.lease_token = h.lease_token
WHERE t.state IN ('running', 'cancelling')
FOR UPDATE OF t
