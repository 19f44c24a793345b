-- Registers a replica and tells whether another one is live. Run after
-- replica_lock.sql in one transaction, so two replicas starting together do not both
-- see an empty registry. $1 id, $2 name, $3 ttl seconds.
-- Returns other_live. Locks: the advisory lock of replica_lock.sql.
WITH me AS (
    INSERT INTO tasklane.replicas (id, name, expires_at)
    VALUES ($1, $2, now() + $3 * interval '1 second')
    ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), expires_at = excluded.expires_at
)
SELECT EXISTS (SELECT 1 FROM tasklane.replicas WHERE id <> $1 AND expires_at > now()) AS other_live
