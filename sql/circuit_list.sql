-- Every circuit that has a row (a route that failed at least once since it was last
-- reset), by route name, with the database's clock. No parameters. Locks: none.
SELECT now() AS now, route_name, consecutive_failures, opened_at, retry_at, probe_until
FROM tasklane.circuits ORDER BY route_name
