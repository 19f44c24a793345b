-- Resumes task type $1: its queued tasks are claimable again. Returns whether it was
-- paused. $1 task_type. Locks: the type's row.
DELETE FROM tasklane.paused_task_types WHERE task_type = $1
