-- The probe's call ended: success ($2 true) closes the circuit; a transient failure
-- opens it again for $3 seconds from now. Returns the row as it is now.
-- $1 route_name, $2 succeeded, $3 open seconds. Locks: the circuit's row.
UPDATE tasklane.circuits
SET consecutive_failures = CASE WHEN $2 THEN 0 ELSE consecutive_failures + 1 END,
    opened_at   = CASE WHEN $2 THEN NULL ELSE now() END,
    retry_at    = CASE WHEN $2 THEN NULL ELSE now() + make_interval(secs => $3) END,
    probe_until = NULL,
    updated_at  = now()
WHERE route_name = $1
RETURNING consecutive_failures, opened_at, retry_at
