-- Statistics of the tasks table and its queue mirror as autovacuum would have them
-- within a minute (ANALYZE counts the caller's own uncommitted rows). No parameters.
-- Locks: SHARE UPDATE EXCLUSIVE on both tables until the transaction ends.
ANALYZE tasklane.tasks, tasklane.task_queue
