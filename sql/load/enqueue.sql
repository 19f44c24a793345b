-- Queues $2 tasks of type $1 in one statement, for benchmarks and the load generator:
-- each row and its event 1 (task.queued) exactly as tasklane.submit_task leaves them, but
-- without the per-task round trips, admission or owner lock (bulk setup, not a submit).
-- Ids are UUIDv7-shaped (milliseconds of clock_timestamp() in the first 48 bits) like
-- the ids of real submits.
-- $1 task_type, $2 count, $3 app, $4 effect-key prefix (unique per call), $5 input jsonb,
-- $6 max_attempts, $7 lease_seconds, $8 attempt_timeout_seconds.
-- Locks: the new rows.
WITH inserted AS (
    INSERT INTO tasklane.tasks (
        id, app, scope_id, effect_key, task_type, request_digest, input, max_attempts,
        on_restart, privacy, lease_seconds, attempt_timeout_seconds, event_seq)
    SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
               PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
               FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid,
           $3, 'load-' || (n % 1000), $4 || n, $1, '\x00'::bytea, $5, $6,
           'retry', 'local_only', $7, $8, 1
    FROM generate_series(1, $2::bigint) AS n
    RETURNING id, created_at
)
INSERT INTO tasklane.task_events (task_id, seq, type, data, at)
SELECT id, 1, 'task.queued', '{"attempt": 0}', created_at FROM inserted
