-- The floors due to rise (the claims have got past them, tasklane.turn_points) that this
-- transaction now holds: for each, the floors' transaction advisory lock taken
-- exclusively, tried and never waited for. A floor whose lock is not free (a writer of
-- claimable rows of that type and priority is in flight, or another replica raises it)
-- is left for the next pass. sql/floors_raise.sql then raises them, in a statement of
-- its own so that its snapshot, taken after the locks, sees every claimable row below
-- the points.
-- No parameters. Locks: the floors' advisory locks (class 1953264742), exclusive, until
-- the transaction ends.
WITH due AS MATERIALIZED (
    SELECT f.task_type, f.priority
    FROM tasklane.turn_floors f
    JOIN tasklane.turn_points p ON p.task_type = f.task_type AND p.priority = f.priority
    WHERE p.turn > f.floor
)
SELECT d.task_type, d.priority
FROM due d
WHERE pg_try_advisory_xact_lock(1953264742, hashtext(d.task_type || '/' || d.priority))
