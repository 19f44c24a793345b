-- Registers the task types a replica serves, with the defaults a submit resolves from
-- them, so tasklane.queue_task can refuse an unknown type and resolve defaults in the
-- database. Every replica runs it at start; the last one to start wins where replicas
-- disagree (a rolling change of the task-types file). Types a replica stops serving
-- stay registered.
-- $1 name[], $2 max_attempts[], $3 on_restart[], $4 privacy[], $5 lease_seconds[],
-- $6 attempt_timeout_seconds[], $7 deadline_seconds[] (elements nullable),
-- $8 resource[] (elements nullable), $9 input_bytes (the replica's input bound).
-- Locks: the registered rows, in name order (callers pass names sorted, so replicas
-- starting together cannot deadlock).
INSERT INTO tasklane.registered_task_types AS r (
    name, max_attempts, on_restart, privacy, lease_seconds, attempt_timeout_seconds,
    deadline_seconds, resource, input_bytes, registered_at)
SELECT t.name, t.max_attempts, t.on_restart, t.privacy, t.lease_seconds,
       t.attempt_timeout_seconds, t.deadline_seconds, t.resource, $9::int8, now()
FROM unnest($1::text[], $2::int4[], $3::text[], $4::text[], $5::int4[], $6::int4[],
            $7::int8[], $8::text[])
     AS t (name, max_attempts, on_restart, privacy, lease_seconds, attempt_timeout_seconds,
           deadline_seconds, resource)
ORDER BY t.name
ON CONFLICT (name) DO UPDATE SET
    max_attempts = EXCLUDED.max_attempts,
    on_restart = EXCLUDED.on_restart,
    privacy = EXCLUDED.privacy,
    lease_seconds = EXCLUDED.lease_seconds,
    attempt_timeout_seconds = EXCLUDED.attempt_timeout_seconds,
    deadline_seconds = EXCLUDED.deadline_seconds,
    resource = EXCLUDED.resource,
    input_bytes = EXCLUDED.input_bytes,
    registered_at = EXCLUDED.registered_at
