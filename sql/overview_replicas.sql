-- Live replicas of the admin overview. No parameters. Locks: none.
SELECT id, name, started_at, heartbeat_at
FROM tasklane.replicas
WHERE expires_at > now()
ORDER BY started_at
