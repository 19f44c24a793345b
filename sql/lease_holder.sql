-- Before a remote worker's live output is taken: whether the lease token still holds
-- the task's lease, and of which attempt. A read, so a chunk of output costs no write
-- (a token is kept only on a running or cancelling task: V17's CHECK).
-- $1 id, $2 lease_token. No row: the task is gone. Locks: none.
SELECT app, scope_id, attempt, coalesce(lease_token = $2, false) AS held
FROM tasklane.tasks
WHERE id = $1
