-- The transaction-scoped try-lock that lets one replica at a time analyze: the others
-- skip the pass rather than queue behind its ANALYZE.
-- $1 the lock's fixed key. Returns whether it was taken. Locks: that advisory lock.
SELECT pg_try_advisory_xact_lock($1)
