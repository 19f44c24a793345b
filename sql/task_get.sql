-- One task's view, filtered by its owner. $1 id, $2 app, $3 scope_id (nullable: any
-- scope of the app). Locks: none.
SELECT * FROM tasklane.task_views
WHERE id = $1 AND app = $2 AND ($3::text IS NULL OR scope_id = $3)
