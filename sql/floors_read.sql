-- Every claims' floor (tasklane.turn_floors) with where the claims have got
-- (tasklane.turn_points) and the writers of claimable rows of its task type and priority
-- in flight now: the virtual transactions holding the floor's advisory lock (class
-- 1953264742, taken shared by tasklane.hold_floors before a claimable row is written).
-- A writer takes its turns after that lock, so one that takes it later than this read
-- sees a point at least as high as the one read here, and its turns are not below it.
-- The floor keeper raises a floor to the point it read here once none of the writers it
-- read here holds the lock any more (sql/floors_raise.sql): a raise then waits for
-- nobody and is never starved by writers that overlap one another.
-- No parameters. Locks nothing (pg_locks is read once).
WITH writers AS MATERIALIZED (
    SELECT l.objid, array_agg(l.virtualtransaction) AS writers
    FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.classid = 1953264742 AND l.objsubid = 2
      AND l.granted
      -- pg_locks lists every database's locks; advisory locks are a database's own.
      AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
    GROUP BY l.objid
)
SELECT f.task_type, f.priority, f.floor, p.turn AS point,
       coalesce(w.writers, '{}') AS writers
FROM tasklane.turn_floors f
-- A point is read from the top of its index, the current version of its row (by the
-- key a read would visit every version a held snapshot keeps).
CROSS JOIN LATERAL (
    SELECT p.turn FROM tasklane.turn_points p
    WHERE p.task_type = f.task_type AND p.priority = f.priority
    ORDER BY p.turn DESC
    LIMIT 1) p
LEFT JOIN writers w ON w.objid = hashtext(f.task_type || '/' || f.priority)::oid
