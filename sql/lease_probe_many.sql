-- After a batched fenced write left some ids unmatched: which of them still exist
-- (their lease was lost) as opposed to gone (deleted). Batch form of lease_probe.sql.
-- $1 ids uuid[]. Locks: none.
SELECT id FROM tasklane.tasks WHERE id = ANY($1)
