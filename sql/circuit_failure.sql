-- Counts one transient failure of a call made while the circuit was closed; the
-- failure that reaches $2 consecutive failures opens it for $3 seconds. Failures of
-- calls let through before the circuit opened count but do not move retry_at (the
-- circuit opens once). Returns the row and whether this failure opened it.
-- $1 route_name, $2 failures threshold, $3 open seconds. Locks: the circuit's row.
INSERT INTO tasklane.circuits AS c (route_name, consecutive_failures, opened_at, retry_at)
VALUES ($1, 1,
        CASE WHEN $2 <= 1 THEN now() END,
        CASE WHEN $2 <= 1 THEN now() + make_interval(secs => $3) END)
ON CONFLICT (route_name) DO UPDATE
SET consecutive_failures = c.consecutive_failures + 1,
    opened_at = CASE WHEN c.opened_at IS NULL AND c.consecutive_failures + 1 >= $2
                     THEN now() ELSE c.opened_at END,
    retry_at  = CASE WHEN c.opened_at IS NULL AND c.consecutive_failures + 1 >= $2
                     THEN now() + make_interval(secs => $3) ELSE c.retry_at END,
    updated_at = now()
RETURNING consecutive_failures, opened_at, retry_at,
          (opened_at = now() AND consecutive_failures >= $2) AS opened
