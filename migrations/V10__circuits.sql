-- V10: circuit breakers, one per route name (the `name` of a `[[task_type.routes]]`
-- entry), shared by every replica. Forward-only: never edit once landed.
--
-- A route that never failed has no row, and a closed circuit is only written when it
-- has failures to count or to reset: the success path of a healthy route reads (at
-- most) and never writes, so no row is hot.
--
-- closed:    opened_at IS NULL; consecutive_failures counts transient failures since
--            the last success.
-- open:      opened_at IS NOT NULL and now() < retry_at: calls skip the route.
-- half-open: opened_at IS NOT NULL and now() >= retry_at: one caller in the cluster
--            takes the probe by setting probe_until (an atomic UPDATE that re-checks
--            the row), so concurrent callers find it taken. probe_until is the probe's
--            lease: a prober that dies mid-call leaves it to expire, then the next
--            caller probes. The probe's success closes the circuit, its failure opens
--            it again for the route's open time.
CREATE TABLE tasklane.circuits (
    route_name           text PRIMARY KEY CHECK (length(route_name) BETWEEN 1 AND 200),
    consecutive_failures integer NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
    opened_at            timestamptz,
    retry_at             timestamptz,
    probe_until          timestamptz,
    updated_at           timestamptz NOT NULL DEFAULT now(),
    CHECK ((opened_at IS NULL) = (retry_at IS NULL)),
    CHECK (opened_at IS NOT NULL OR probe_until IS NULL)
);
