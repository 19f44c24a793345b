-- A call made while the circuit was closed succeeded (or was refused for good: the
-- route is up): its failure count starts again. Only written when the permit read
-- failures to reset; a circuit that opened meanwhile stays open (only its probe closes
-- it). $1 route_name. Locks: the circuit's row.
UPDATE tasklane.circuits
SET consecutive_failures = 0, updated_at = now()
WHERE route_name = $1 AND opened_at IS NULL AND consecutive_failures > 0
