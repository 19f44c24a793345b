-- After a remote worker's batched fenced write left some ids unmatched: which of them
-- exist and are the owner's (their lease was lost), as opposed to gone (deleted). A
-- task of another owner is answered as gone: a worker never learns that it exists.
-- Owner-scoped batch form of lease_probe.sql.
-- $1 ids uuid[], $2 app, $3 scope_id (NULL: any scope of the app). Locks: none.
SELECT id
FROM tasklane.tasks
WHERE id = ANY($1::uuid[]) AND app = $2 AND ($3::text IS NULL OR scope_id = $3::text)
