-- The floors due to rise (the claims have got past them, tasklane.turn_points) that this
-- transaction now holds: for each, in a fixed order, the floors' transaction advisory
-- lock taken exclusively. Writers of claimable rows of that type and priority hold it
-- shared until they commit (tasklane.hold_floors), so under a steady stream of submits
-- it is almost never free: a lock only tried was refused nearly every time, and the
-- floors stayed where they were for minutes, so every claim and submit walked the index
-- entries of every task claimed since (under a held snapshot, hundreds of thousands). So
-- the lock is waited for, up to the transaction's lock_timeout (the caller sets it):
-- a waiting exclusive request is granted once the writers in flight commit, and writers
-- that come after it wait for the raise (milliseconds). A timeout (or a deadlock with a
-- writer of several types, whose locks come in another order) fails the statement, and
-- the floors rise at the next pass. sql/floors_raise.sql then raises them, in a
-- statement of its own so that its snapshot, taken after the locks, sees every claimable
-- row below the points.
-- No parameters. Locks: the floors' advisory locks (class 1953264742), exclusive, until
-- the transaction ends.
WITH due AS MATERIALIZED (
    SELECT f.task_type, f.priority
    FROM tasklane.turn_floors f
    JOIN tasklane.turn_points p ON p.task_type = f.task_type AND p.priority = f.priority
    WHERE p.turn > f.floor
    ORDER BY f.task_type, f.priority
)
SELECT d.task_type, d.priority
FROM due d
CROSS JOIN LATERAL (
    SELECT pg_advisory_xact_lock(1953264742, hashtext(d.task_type || '/' || d.priority))
) AS locked
