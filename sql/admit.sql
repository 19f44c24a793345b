-- Admission of an existing task queued again by a retry, inside its transaction (see
-- sql/functions/admit.sql; a submit calls it inside
-- tasklane.submit_task): emergency stop, capacity, rate, budget, in that order.
-- $1 task id, $2 app, $3 usage_subject (nullable), $4 now (nullable: the database's).
-- Returns refused (NULL when admitted), limit_id, free_at, at.
-- Locks: one free capacity slot per applicable capacity limit and one rate token per
-- applicable rate limit, FOR UPDATE SKIP LOCKED (never waits).
SELECT refused, limit_id, free_at, at FROM tasklane.admit($1, $2, $3, $4)
