-- Before a remote worker's batched live output is taken: of each (id, lease_token)
-- pair, whether the token still holds the task's lease, and of which attempt. A read,
-- so a chunk of output costs no write (a token is kept only on a running or cancelling
-- task: V17's CHECK). Only the owner's tasks answer: a task of another owner is
-- answered as gone, as the batched heartbeat and completion answer it.
-- Batch, owner-scoped form of lease_holder.sql.
-- $1 ids uuid[], $2 lease_tokens uuid[]: parallel arrays; $3 app, $4 scope_id (NULL:
-- any scope of the app). Returns (id, attempt, held) of every id that exists and is
-- the owner's. Locks: none.
SELECT t.id, t.attempt, coalesce(t.lease_token = b.lease_token, false) AS held
FROM tasklane.tasks t
JOIN unnest($1::uuid[], $2::uuid[]) AS b (id, lease_token) ON t.id = b.id
WHERE t.id = ANY($1::uuid[]) AND t.app = $3 AND ($4::text IS NULL OR t.scope_id = $4::text)
