-- Registers a replica and tells whether another one is live. Run after
-- replica_lock.sql in one transaction, so two replicas starting together do not both
-- see an empty registry. $1 id, $2 name, $3 ttl seconds, $4 whether it runs the
-- maintenance role.
-- Returns other_live, and maintainers: the live replicas that run the maintenance role,
-- this one included.
-- Locks: the advisory lock of replica_lock.sql.
WITH me AS (
    INSERT INTO tasklane.replicas (id, name, expires_at, maintains)
    VALUES ($1, $2, now() + $3 * interval '1 second', $4)
    ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), expires_at = excluded.expires_at,
                                   maintains = excluded.maintains
)
SELECT EXISTS (SELECT 1 FROM tasklane.replicas WHERE id <> $1 AND expires_at > now()) AS other_live,
       (SELECT count(*) FROM tasklane.replicas WHERE id <> $1 AND expires_at > now() AND maintains)
       + CASE WHEN $4 THEN 1 ELSE 0 END AS maintainers
