-- How many of the given tasks finished in a state other than succeeded.
-- $1 ids uuid[]. Locks: none.
SELECT count(*)
FROM tasklane.tasks
WHERE id = ANY($1) AND state <> 'succeeded' AND finished_at IS NOT NULL
