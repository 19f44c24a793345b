-- How many of the given tasks have not finished yet (the load generator's wait).
-- $1 ids uuid[]. Locks: none.
SELECT count(*) FROM tasklane.tasks WHERE id = ANY($1) AND finished_at IS NULL
