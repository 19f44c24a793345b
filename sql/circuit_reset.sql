-- Closes circuit $1 by an operator: no failures, no probe, no row (a route that never
-- failed has none). Returns whether it had a row. $1 route_name. Locks: the row.
DELETE FROM tasklane.circuits WHERE route_name = $1
RETURNING route_name
