-- After adding history: VACUUM ANALYZE the tables it grew, so the planner and the
-- visibility map see them as a deployment would. Run outside a transaction (VACUUM
-- refuses one): one statement naming both tables, since a simple-query batch of two
-- statements runs as one implicit transaction block and VACUUM refuses that too.
-- Locks: SHARE UPDATE EXCLUSIVE on each table while it is vacuumed.
VACUUM ANALYZE tasklane.tasks, tasklane.task_events
