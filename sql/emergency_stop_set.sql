-- Turns an emergency stop on ($2 true) or off, globally ($1 NULL) or for one app.
-- Running tasks are not touched; admission refuses new submits and claims leave the
-- stopped tasks waiting (sql/claim.sql).
-- $1 app (nullable), $2 enabled. Locks: the stop row.
WITH off AS (
    DELETE FROM tasklane.emergency_stops WHERE NOT $2 AND app = coalesce($1, '')
)
INSERT INTO tasklane.emergency_stops (app)
SELECT coalesce($1, '') WHERE $2
ON CONFLICT (app) DO NOTHING
