-- Removes one admission limit; its slots and tokens go with it (tasks holding slots
-- simply have nothing left to give back). $1 kind, $2 app (nullable), $3 usage_subject
-- (nullable), $4 window_seconds (nullable). Returns the removed id. Locks: the row.
DELETE FROM tasklane.limits
WHERE kind = $1 AND app = coalesce($2, '') AND usage_subject = coalesce($3, '')
  AND window_seconds = coalesce($4, 0)
RETURNING id
