-- The text so far of a task's running attempt, for an observer that starts or may
-- have missed deltas. $1 task id uuid. Locks: none.
SELECT attempt, text FROM tasklane.task_output WHERE task_id = $1
