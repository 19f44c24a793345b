-- Prunes admission history older than 24 h and refusal counts older than 7 days, at
-- most $1 history rows per call. Safe concurrently (SKIP LOCKED).
-- $1 limit. Returns the history rows deleted. Locks: the deleted rows.
WITH old AS (
    SELECT ctid FROM tasklane.admission_history
    WHERE at < now() - interval '24 hours'
    LIMIT $1
    FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM tasklane.admission_history h USING old WHERE h.ctid = old.ctid
    RETURNING 1
), refusals AS (
    DELETE FROM tasklane.refusals WHERE day < (now() AT TIME ZONE 'UTC')::date - 7
)
SELECT count(*) FROM gone
