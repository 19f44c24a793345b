-- tasklane's tables that churn far faster than autovacuum visits them: at least $1 dead
-- rows and at least as many dead rows as live ones, not vacuumed (by anyone) in the
-- last $2 seconds. This is the small, busy table whose every row is dead within
-- seconds: the queue's mirror (a row in at submit, updated at claim, out at the end)
-- and the claims' turn points. Autovacuum visits each database once a naptime (a
-- minute by default) and one worker vacuums its tables in turn, so such a table
-- collects a minute or more of dead rows; every claim then walks their index entries.
-- A table of more than $3 bytes (heap, indexes and TOAST: what a vacuum reads) is left
-- to autovacuum however it churns: the tasks table turns over as fast, but its live
-- rows are the retained history, and its dead ones do not lie in front of the claims.
-- The $2 gap bounds the work when a vacuum cannot remove the dead rows (a transaction
-- older than them still runs): one try per table per gap across every replica.
-- Only tables this role may vacuum (it owns them, as the role that migrates does).
-- $1 least dead rows, $2 seconds since the last vacuum, $3 most bytes. Returns the
-- qualified names.
-- Locks: none.
SELECT format('%I.%I', s.schemaname, s.relname) AS name
FROM pg_stat_user_tables s
JOIN pg_class c ON c.oid = s.relid
WHERE s.schemaname = 'tasklane'
  AND s.n_dead_tup >= $1
  AND s.n_dead_tup >= s.n_live_tup
  AND coalesce(greatest(s.last_vacuum, s.last_autovacuum), '-infinity')
      < now() - $2::float8 * interval '1 second'
  AND pg_total_relation_size(c.oid) <= $3
  AND pg_has_role(c.relowner, 'USAGE')
ORDER BY s.n_dead_tup DESC
