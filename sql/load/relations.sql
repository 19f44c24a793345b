-- Every tasklane table's size and upkeep, for the soak: heap (main fork), indexes and
-- TOAST (with its index) in bytes, live and dead tuples as the statistics last counted them, and
-- how many times autovacuum, a VACUUM by hand (tasklane's vacuum keeper) and
-- autoanalyze have run on it. No parameters.
-- Locks: none (size functions take no lock; a table dropped meanwhile reads as NULL).
SELECT c.relname AS name,
       pg_relation_size(c.oid)::int8 AS heap_bytes,
       pg_indexes_size(c.oid)::int8 AS index_bytes,
       coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0)::int8 AS toast_bytes,
       coalesce(s.n_live_tup, 0)::int8 AS live_tuples,
       coalesce(s.n_dead_tup, 0)::int8 AS dead_tuples,
       coalesce(s.autovacuum_count, 0)::int8 AS autovacuums,
       coalesce(s.vacuum_count, 0)::int8 AS vacuums,
       coalesce(s.autoanalyze_count, 0)::int8 AS autoanalyzes
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_stat_all_tables s ON s.relid = c.oid
WHERE n.nspname = 'tasklane' AND c.relkind = 'r'
ORDER BY c.relname
