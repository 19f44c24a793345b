-- Circuits not closed (open, or half-open waiting for a probe) with seconds since they
-- opened, for the metrics sampler: a route skipped for long is an outage of its
-- upstream that retries alone will not end.
-- No parameters. Locks: none.
SELECT route_name, extract(epoch FROM now() - opened_at)::float8 AS seconds
FROM tasklane.circuits
WHERE opened_at IS NOT NULL
ORDER BY route_name
