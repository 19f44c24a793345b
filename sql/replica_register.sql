-- Registers a replica and tells whether another one is live. Run after
-- replica_lock.sql in one transaction, so two replicas starting together do not both
-- see an empty registry. $1 id, $2 name, $3 ttl seconds, $4 whether it runs the
-- maintenance role, $5 whether it runs the worker role.
-- Returns other_live; maintainers: the live replicas that run the maintenance role; and
-- workers: those that run the worker role (each count includes this one when it does).
-- Locks: the advisory lock of replica_lock.sql.
WITH me AS (
    INSERT INTO tasklane.replicas (id, name, expires_at, maintains, works)
    VALUES ($1, $2, now() + $3 * interval '1 second', $4, $5)
    ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), expires_at = excluded.expires_at,
                                   maintains = excluded.maintains, works = excluded.works
), others AS (
    SELECT count(*) FILTER (WHERE maintains) AS maintainers,
           count(*) FILTER (WHERE works) AS workers,
           count(*) AS live
    FROM tasklane.replicas WHERE id <> $1 AND expires_at > now()
)
SELECT live > 0 AS other_live,
       maintainers + CASE WHEN $4 THEN 1 ELSE 0 END AS maintainers,
       workers + CASE WHEN $5 THEN 1 ELSE 0 END AS workers
FROM others
