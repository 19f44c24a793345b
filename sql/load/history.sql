-- Adds $1 finished (succeeded) tasks with their three events, as a long-running
-- deployment accumulates them before pruning: the "scale" benchmark's history.
-- $1 count, $2 app, $3 effect-key prefix (unique per call).
-- Locks: the new rows.
WITH inserted AS (
    INSERT INTO tasklane.tasks (
        id, app, scope_id, effect_key, task_type, request_digest, input, max_attempts,
        on_restart, privacy, lease_seconds, attempt_timeout_seconds, event_seq, state,
        attempt, result, route, worker_id, created_at, started_at, finished_at)
    SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
               PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
               FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid,
           $2, 'history-' || (n % 1000), $3 || n, 'noop', '\x00'::bytea, '{}', 3,
           'retry', 'local_only', 30, 300, 3, 'succeeded', 1, '{}', 'local', 'history',
           now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour'
    FROM generate_series(1, $1::bigint) AS n
    RETURNING id, created_at
)
INSERT INTO tasklane.task_events (task_id, seq, type, data, at)
SELECT id, e.seq, e.type, '{"attempt": 1}', created_at
FROM inserted, (VALUES (1, 'task.queued'), (2, 'task.running'), (3, 'task.succeeded')) AS e(seq, type)
