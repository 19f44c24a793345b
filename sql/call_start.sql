-- The start of one provider call of an attempt, in one round trip: the route's circuit
-- permit (sql/circuit_read.sql), the one probe of a circuit whose open time is over
-- (sql/circuit_probe.sql) and, when $6, the attempt's budget reservation
-- (sql/budget_reserve.sql), which is made only if the call may go (closed circuit, or
-- the probe taken here): a skipped route reserves nothing.
-- The probe's UPDATE re-checks the row after waiting for a concurrent taker's lock, so
-- of any number of concurrent callers exactly one gets probe_taken; the circuit columns
-- are the row as this statement's snapshot saw it (no row: closed, nothing counted).
-- The reservation is the JSON of tasklane.reserve_budget's answer ({outcome, limit_id,
-- at}), NULL when not asked for or when the call may not go. CASE evaluates the
-- sub-select only in the branch taken (the function is volatile, never folded).
-- $1 route_name, $2 probe lease seconds, $3 task id, $4 lease_token, $5 units (>= 0),
-- $6 reserve. Locks: the circuit's row when the probe is taken; the budget's limit row
-- when a budget applies and the reservation is made.
WITH probe AS (
    UPDATE tasklane.circuits
    SET probe_until = now() + make_interval(secs => $2), updated_at = now()
    WHERE route_name = $1
      AND opened_at IS NOT NULL
      AND retry_at <= now()
      AND (probe_until IS NULL OR probe_until <= now())
    RETURNING probe_until
), permit AS (
    SELECT c.consecutive_failures, c.opened_at, c.retry_at, c.probe_until,
           EXISTS (SELECT 1 FROM probe) AS probe_taken
    FROM (SELECT) AS one
    LEFT JOIN tasklane.circuits c ON c.route_name = $1
)
SELECT now() AS now, p.consecutive_failures, p.opened_at, p.retry_at, p.probe_until,
       p.probe_taken,
       CASE WHEN $6::bool AND (p.opened_at IS NULL OR p.probe_taken)
            THEN (SELECT to_jsonb(r) FROM tasklane.reserve_budget($3, $4, $5) AS r)
       END AS reservation
FROM permit p
