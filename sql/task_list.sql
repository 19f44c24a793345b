-- An app's tasks newest first, keyset-paged on the time-ordered id.
-- $1 app, $2 scope_id, $3 state, $4 task_type (each nullable: no filter),
-- $5 cursor: list ids below it (nullable: from the newest), $6 limit,
-- $7 source_id (nullable; matched exactly, never as a pattern).
-- Locks: none.
SELECT * FROM tasklane.task_views
WHERE app = $1
  AND ($2::text IS NULL OR scope_id = $2)
  AND ($3::text IS NULL OR state = $3)
  AND ($4::text IS NULL OR task_type = $4)
  AND ($5::uuid IS NULL OR id < $5)
  AND ($7::text IS NULL OR source_id = $7)
ORDER BY id DESC
LIMIT $6
