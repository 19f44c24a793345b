-- After tasklane.admit for an existing task (a failed or cancelled task queued again by
-- `retry`), records whether it now holds capacity, so the release triggers fire when it
-- ends again. Run it in the transaction that requeues the task.
-- $1 task id. Locks: the task row.
UPDATE tasklane.tasks
SET holds_capacity = EXISTS (SELECT 1 FROM tasklane.capacity_slots c WHERE c.task_id = $1)
WHERE id = $1
