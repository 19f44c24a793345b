-- How many other sessions this database has now: a sampler of the WAL counters waits
-- for none, so every worker's backend has exited and reported its counters. No
-- parameters. Locks: none.
SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
