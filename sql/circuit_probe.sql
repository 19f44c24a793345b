-- Takes the one probe of an open circuit whose open time is over, for $2 seconds (the
-- probe's lease: the longest the probe call may take). The UPDATE re-checks the row
-- after waiting for a concurrent taker's lock, so of any number of concurrent callers
-- exactly one gets a row back; the others see the probe taken (or the circuit closed)
-- and get nothing. $1 route_name, $2 lease seconds. Locks: the circuit's row.
UPDATE tasklane.circuits
SET probe_until = now() + make_interval(secs => $2), updated_at = now()
WHERE route_name = $1
  AND opened_at IS NOT NULL
  AND retry_at <= now()
  AND (probe_until IS NULL OR probe_until <= now())
RETURNING probe_until
