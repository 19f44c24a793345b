-- The process ids of the other backends connected to this database (the fleet's), to
-- read their CPU time from /proc. No parameters. Locks: none.
SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
