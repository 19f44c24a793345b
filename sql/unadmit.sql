-- Gives back what admission took for a task id that was not inserted (a concurrent
-- duplicate won the identity): capacity slots, rate tokens, the history row.
-- $1 task id, $2 app, $3 usage_subject (nullable).
-- Locks: the rows it restores (already held by this transaction).
SELECT tasklane.unadmit($1, $2, $3)
