-- Extends the leases of many attempts (each up to its deadline) in one statement: one
-- tick of a claim loop's heartbeat batcher (src/worker/heartbeats.rs) instead of a
-- statement per attempt.
-- Each lease is fenced on its own token; a lease extension writes no event row.
-- $1 ids uuid[] (sorted), $2 lease_tokens uuid[]: parallel arrays, one pair per attempt.
-- Returns (id, state) of each extended lease; a pair missing from the answer lost its
-- lease or is gone. `state = 'cancelling'` tells the worker cancellation was requested.
-- Locks: the extended task rows, in id order (the primary key's), the order
-- complete_many.sql takes them in too.
UPDATE tasklane.tasks t
-- Never past the attempt's deadline (NULL on an attempt claimed before attempts had
-- deadlines: no cap).
SET lease_expires_at = least(now() + t.lease_seconds * interval '1 second',
                             t.attempt_deadline_at)
FROM unnest($1::uuid[], $2::uuid[]) AS b(id, lease_token)
-- The batch by primary key, in id order; the lease token alone fences: a CHECK
-- constraint keeps a token only on a running or cancelling task, and a state test here
-- would make the plan quadratic in the batch.
WHERE t.id = ANY($1::uuid[]) AND t.id = b.id AND t.lease_token = b.lease_token
RETURNING t.id, t.state
