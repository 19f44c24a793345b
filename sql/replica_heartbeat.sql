-- Keeps a replica live and forgets replicas long dead. $1 id, $2 name, $3 ttl seconds.
-- Re-registers a replica whose row was removed (it was presumed dead but is not).
-- Locks: the replica's row; the expired rows it deletes.
WITH gone AS (
    DELETE FROM tasklane.replicas WHERE expires_at < now() - interval '1 hour'
)
INSERT INTO tasklane.replicas (id, name, expires_at)
VALUES ($1, $2, now() + $3 * interval '1 second')
ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), expires_at = excluded.expires_at
