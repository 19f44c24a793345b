-- Keeps a replica live and forgets replicas long dead. $1 id, $2 name, $3 ttl seconds,
-- $4 whether it runs the maintenance role.
-- Re-registers a replica whose row was removed (it was presumed dead but is not).
-- Returns maintainers: the live replicas that run the maintenance role, this one
-- included (the statement's snapshot does not see its own upsert, so it counts itself).
-- Locks: the replica's row; the expired rows it deletes.
WITH gone AS (
    DELETE FROM tasklane.replicas WHERE expires_at < now() - interval '1 hour'
), me AS (
    INSERT INTO tasklane.replicas (id, name, expires_at, maintains)
    VALUES ($1, $2, now() + $3 * interval '1 second', $4)
    ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), expires_at = excluded.expires_at,
                                   maintains = excluded.maintains
)
SELECT (SELECT count(*) FROM tasklane.replicas WHERE id <> $1 AND expires_at > now() AND maintains)
       + CASE WHEN $4 THEN 1 ELSE 0 END AS maintainers
