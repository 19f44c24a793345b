-- What holds back vacuum's horizon for tasklane's tables, for the metrics sampler: one
-- row per holder with the transaction id it holds (as text) and its age in seconds when
-- PostgreSQL knows it. Holders counted:
--  - backends of this database with a snapshot (backend_xmin) or a transaction id of
--    their own (backend_xid): an open REPEATABLE READ transaction, a long query, a
--    forgotten BEGIN, pg_dump. Aged from xact_start; NULL when this role may not see
--    other roles' xact_start (grant pg_read_all_stats for exact ages).
--  - backends with no database: walsenders carrying a standby's hot_standby_feedback,
--    which holds every database's horizon. No clock (NULL).
--  - prepared transactions of this database, aged from when they were prepared.
--  - replication slots' xmin (a physical slot with feedback, a logical slot building
--    its snapshot), which holds every database's horizon. No clock (NULL).
-- Left out on purpose: backends of other databases (they hold only the shared
-- catalogs), and slots' catalog_xmin (a logical slot holds back only the system
-- catalogs' dead rows, not tasklane's tables; it retains WAL instead).
-- No parameters. Locks: none.
SELECT 'backend ' || a.pid AS holder,
       coalesce(a.backend_xmin, a.backend_xid)::text AS xmin,
       extract(epoch FROM now() - a.xact_start)::float8 AS seconds
FROM pg_stat_activity a
WHERE a.pid <> pg_backend_pid()
  AND (a.backend_xmin IS NOT NULL OR a.backend_xid IS NOT NULL)
  AND (a.datname = current_database() OR a.datid IS NULL)
UNION ALL
SELECT 'prepared ' || p.gid, p.transaction::text,
       extract(epoch FROM now() - p.prepared)::float8
FROM pg_prepared_xacts p
WHERE p.database = current_database()
UNION ALL
SELECT 'slot ' || s.slot_name, s.xmin::text, NULL::float8
FROM pg_replication_slots s
WHERE s.xmin IS NOT NULL
