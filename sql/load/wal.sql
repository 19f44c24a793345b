-- What a measured stretch of work cost the server in WAL and commits: the WAL position
-- (exact at once), and PostgreSQL's cumulative counters of WAL records, full-page
-- images and WAL flushes (cluster-wide) and of this database's commits. The counters
-- include a backend's work once it has reported it (when it is idle for a while or
-- exits), so a reader takes its second sample after the workers are gone. No
-- parameters. Locks: none.
SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 AS wal_position,
       w.wal_records::int8 AS wal_records,
       w.wal_fpi::int8 AS wal_fpi,
       w.wal_sync::int8 AS wal_sync,
       d.xact_commit::int8 AS commits
FROM pg_stat_wal w, pg_stat_database d
WHERE d.datname = current_database()
