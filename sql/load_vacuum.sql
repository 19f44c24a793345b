-- After adding history: VACUUM ANALYZE the tables it grew, so the planner and the
-- visibility map see them as a deployment would. Run outside a transaction (VACUUM
-- refuses one); two statements, sent as one simple-query batch.
-- Locks: SHARE UPDATE EXCLUSIVE on each table while it is vacuumed.
VACUUM ANALYZE tasklane.tasks;
VACUUM ANALYZE tasklane.task_events;
