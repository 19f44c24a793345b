-- Prunes admission history older than 24 h and refusal counts older than 7 days, at
-- most $1 history rows per call, and the budget reservations of attempts that ended
-- (tasklane.reserve_budget forgets them too, but only for the budget it reserves
-- from). Safe concurrently (SKIP LOCKED).
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
), reservations AS (
    DELETE FROM tasklane.budget_reservations r
    WHERE NOT EXISTS (SELECT 1 FROM tasklane.tasks t
                      WHERE t.id = r.task_id AND t.attempt = r.attempt
                        AND t.state IN ('running', 'cancelling'))
)
SELECT count(*) FROM gone
