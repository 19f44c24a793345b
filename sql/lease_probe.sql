-- After a fenced write matched no row: tells a lost lease (the task exists, another claim
-- or a settlement moved it on) from a task that is gone (deleted).
-- $1 id. Locks: none.
SELECT state FROM tasklane.tasks WHERE id = $1
