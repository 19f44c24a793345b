-- Becomes the cluster's queue-depth sampler: a session advisory lock, held by the
-- sampler's dedicated connection for as long as that connection lives (a replica that
-- dies drops it, and another takes over at its next try).
-- $1 the lock's fixed key (store::queue::SAMPLER_LOCK). Returns whether it was taken.
-- Locks: that advisory lock, session level.
SELECT pg_try_advisory_lock($1)
