-- Frees reservations whose task no longer needs them: capacity slots held by a task
-- that is gone or terminal, resource slots held by a task that is gone or not running.
-- The triggers give every slot back in the ending transaction, so this finds nothing
-- unless something bypassed them (TRUNCATE, disabled triggers, a hand-written fix).
-- Run it in a REPEATABLE READ transaction: a slot changed since the snapshot (taken or
-- freed concurrently) makes it fail with a serialization error instead of freeing a
-- slot its new holder needs; the caller simply tries again at its next pass.
-- No parameters. Returns the number of slots freed. Locks: the freed rows.
WITH capacity AS (
    UPDATE tasklane.capacity_slots s SET task_id = NULL
    WHERE s.task_id IS NOT NULL AND NOT s.retired
      AND NOT EXISTS (SELECT 1 FROM tasklane.tasks t
                      WHERE t.id = s.task_id AND t.state NOT IN ('succeeded', 'failed', 'cancelled'))
    RETURNING 1
), capacity_retired AS (
    DELETE FROM tasklane.capacity_slots s
    WHERE s.task_id IS NOT NULL AND s.retired
      AND NOT EXISTS (SELECT 1 FROM tasklane.tasks t
                      WHERE t.id = s.task_id AND t.state NOT IN ('succeeded', 'failed', 'cancelled'))
    RETURNING 1
), resource AS (
    UPDATE tasklane.resource_slots s SET task_id = NULL
    WHERE s.task_id IS NOT NULL AND NOT s.retired
      AND NOT EXISTS (SELECT 1 FROM tasklane.tasks t
                      WHERE t.id = s.task_id AND t.state IN ('running', 'cancelling'))
    RETURNING 1
), resource_retired AS (
    DELETE FROM tasklane.resource_slots s
    WHERE s.task_id IS NOT NULL AND s.retired
      AND NOT EXISTS (SELECT 1 FROM tasklane.tasks t
                      WHERE t.id = s.task_id AND t.state IN ('running', 'cancelling'))
    RETURNING 1
)
SELECT (SELECT count(*) FROM capacity) + (SELECT count(*) FROM capacity_retired)
     + (SELECT count(*) FROM resource) + (SELECT count(*) FROM resource_retired)
