-- tasklane's tables whose planner statistics lag far behind their contents: at least
-- $1 rows changed since the last ANALYZE and at least as many as the table held then
-- (a table never analyzed counts as having held none). This is the young table that
-- grew from nothing (a new deployment's first burst) long before autovacuum's first
-- ANALYZE (up to a minute, autovacuum_naptime); an older table needs as many changes
-- as it holds, which autovacuum's 10% rule reaches first unless the table is small and
-- busy (the queue mirror: a row in at submit, out at the end). Only tables this role
-- may analyze (it owns them, as the role that migrates does); others are left to
-- autovacuum.
-- $1 least changes. Returns the tables' qualified names and whether autovacuum has
-- never analyzed them (`young`: the keeper's own ANALYZE takes a small sample then).
-- Locks: none.
SELECT format('%I.%I', s.schemaname, s.relname) AS name,
       s.last_autoanalyze IS NULL AS young
FROM pg_stat_user_tables s
JOIN pg_class c ON c.oid = s.relid
WHERE s.schemaname = 'tasklane'
  AND s.n_mod_since_analyze >= $1
  AND s.n_mod_since_analyze >= greatest(c.reltuples, 0)
  AND pg_has_role(c.relowner, 'USAGE')
ORDER BY s.n_mod_since_analyze DESC
