-- Pauses task type $1: claims skip its tasks from the next claim statement on, on
-- every replica and for remote workers. Pausing a paused type keeps its first time.
-- $1 task_type. Locks: the type's row.
INSERT INTO tasklane.paused_task_types (task_type) VALUES ($1)
ON CONFLICT (task_type) DO NOTHING
