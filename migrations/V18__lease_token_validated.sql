-- V18: V17's CHECK tasks_lease_only_while_running, validated on the rows that were
-- there before it. Alone in its migration, so in a transaction of its own: VALIDATE
-- takes a SHARE UPDATE EXCLUSIVE lock, which claims, settles and submits do not wait
-- for, while it reads the table (V17's UPDATE already cleared any stale token).
-- Forward-only: never edit once landed.
ALTER TABLE tasklane.tasks VALIDATE CONSTRAINT tasks_lease_only_while_running;
