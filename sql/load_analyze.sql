-- Statistics of the tasks table as autovacuum would have them within a minute (ANALYZE
-- counts the caller's own uncommitted rows). No parameters.
-- Locks: SHARE UPDATE EXCLUSIVE on tasklane.tasks until the transaction ends.
ANALYZE tasklane.tasks
