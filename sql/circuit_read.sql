-- One circuit as a permit reads it, with the database's clock: no row means closed
-- with no failures. $1 route_name. Locks: none (a plain read: the success path of a
-- healthy route writes nothing).
SELECT now() AS now, consecutive_failures, opened_at, retry_at, probe_until
FROM tasklane.circuits WHERE route_name = $1
