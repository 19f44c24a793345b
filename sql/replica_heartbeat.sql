-- Keeps a replica live and forgets replicas long dead. $1 id, $2 name, $3 ttl seconds,
-- $4 whether it runs the maintenance role, $5 whether it runs the worker role.
-- Re-registers a replica whose row was removed (it was presumed dead but is not).
-- Returns maintainers and workers: the live replicas that run the maintenance role and
-- the worker role, this one included when it does (the statement's snapshot does not see
-- its own upsert, so it counts itself).
-- Locks: the replica's row; the expired rows it deletes.
WITH gone AS (
    DELETE FROM tasklane.replicas WHERE expires_at < now() - interval '1 hour'
), me AS (
    INSERT INTO tasklane.replicas (id, name, expires_at, maintains, works)
    VALUES ($1, $2, now() + $3 * interval '1 second', $4, $5)
    ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), expires_at = excluded.expires_at,
                                   maintains = excluded.maintains, works = excluded.works
)
SELECT count(*) FILTER (WHERE maintains) + CASE WHEN $4 THEN 1 ELSE 0 END AS maintainers,
       count(*) FILTER (WHERE works) + CASE WHEN $5 THEN 1 ELSE 0 END AS workers
FROM tasklane.replicas WHERE id <> $1 AND expires_at > now()
