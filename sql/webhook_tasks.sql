-- The views of the tasks whose notifications are being sent. $1 task ids. Locks: none.
SELECT * FROM tasklane.task_views WHERE id = ANY ($1::uuid[])
