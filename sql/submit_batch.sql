-- Submits many tasks in one statement: tasklane.submit_task (the single submit's
-- function) once per item, in item order, so each item is answered exactly as a single
-- submit of it would be (created, joined, replayed, conflict, fenced, refused) and
-- items are independent; an identity twice in one batch joins its first item's task.
-- Every parameter is an array with one element per item, in sql/submit.sql's order:
-- $1 id[], $2 app[], $3 scope_id[], $4 effect_key[], $5 usage_subject[], $6 source_id[],
-- $7 task_type[], $8 legacy request_digest[] (after the canonical one, as in submit.sql), $9 input[], $10 priority[], $11 max_attempts[],
-- $12 on_restart[], $13 privacy[], $14 lease_seconds[], $15 attempt_timeout_seconds[],
-- $16 deadline_seconds[], $17 resource[], $18 traceparent[].
-- Returns one row per item, ordered by `n` (1-based), with submit.sql's columns; an
-- item whose identity's task vanished while being read has a NULL outcome.
-- Locks: those of every item's submit, held until the statement's transaction ends.
SELECT b.n, s.outcome, s.refused, s.refused_limit, s.free_at, s.decided_at, (s.task).*
FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
            $7::text[], $8::bytea[], $9::jsonb[], $10::int2[], $11::int4[], $12::text[],
            $13::text[], $14::int4[], $15::int4[], $16::int8[], $17::text[], $18::text[])
     WITH ORDINALITY AS b (id, app, scope_id, effect_key, usage_subject, source_id,
                           task_type, digest, input, priority, max_attempts, on_restart,
                           privacy, lease_seconds, attempt_timeout_seconds,
                           deadline_seconds, resource, traceparent, n)
LEFT JOIN LATERAL tasklane.submit_task(b.id, b.app, b.scope_id, b.effect_key,
                                       b.usage_subject, b.source_id, b.task_type,
                                       tasklane.request_digest(b.task_type, b.source_id,
                                           b.input, b.priority, b.deadline_seconds,
                                           b.max_attempts, b.on_restart, b.privacy)
                                       || b.digest,
                                       b.input, b.priority, b.max_attempts, b.on_restart,
                                       b.privacy, b.lease_seconds, b.attempt_timeout_seconds,
                                       b.deadline_seconds, b.resource, b.traceparent) s ON true
ORDER BY b.n
