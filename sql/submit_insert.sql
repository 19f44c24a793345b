-- Creates a task and its first event (seq 1, task.queued) in one statement. A concurrent
-- submit of the same identity makes ON CONFLICT DO NOTHING return no row: the caller
-- then joins the winner.
-- $1 id, $2 app, $3 scope_id, $4 effect_key, $5 usage_subject, $6 source_id, $7 task_type,
-- $8 request_digest, $9 input, $10 priority, $11 max_attempts, $12 on_restart,
-- $13 privacy, $14 lease_seconds, $15 attempt_timeout_seconds, $16 deadline_seconds
-- (nullable), $17 resource (nullable). holds_capacity records whether admission took
-- capacity slots for this id (tasklane.admit), so only such tasks fire the release
-- triggers.
-- Locks: the new row; waits on a concurrent insert of the same identity.
WITH inserted AS (
    INSERT INTO tasklane.tasks (
        id, app, scope_id, effect_key, usage_subject, source_id, task_type, request_digest,
        input, priority, max_attempts, on_restart, privacy, lease_seconds,
        attempt_timeout_seconds, deadline_at, event_seq, resource, holds_capacity)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,
            now() + $16::bigint * interval '1 second', 1, $17,
            EXISTS (SELECT 1 FROM tasklane.capacity_slots c WHERE c.task_id = $1))
    ON CONFLICT ON CONSTRAINT tasks_identity DO NOTHING
    RETURNING *
), event AS (
    INSERT INTO tasklane.task_events (task_id, seq, type, data, at)
    SELECT id, 1, 'task.queued', jsonb_build_object('attempt', 0), created_at FROM inserted
)
SELECT id, app, scope_id, source_id, usage_subject, task_type, state, priority, attempt,
       max_attempts, progress, phase, created_at, started_at, finished_at, released_at,
       deadline_at, result, error_code, error_message, usage_units, provider, model, route,
       request_digest
FROM inserted
