-- Submits many tasks in one statement: tasklane.submit_tasks (current definition
-- in sql/functions/submit_tasks.sql), which inserts the new tasks to which no fence,
-- stop or limit applies in one multi-row insert, in the order given, and sends every
-- other item through tasklane.submit_task (the single submit's function) in item
-- order, so each item is answered exactly as a single submit of it would be (created,
-- joined, replayed, conflict, fenced, refused) and items are independent; an identity
-- twice in one batch joins its first item's task.
-- Every array has one element per item, in identity order (app, scope, effect key,
-- subject; equal identities in item order): $1 each item's 1-based position in the
-- request, then sql/submit.sql's order: $2 id[], $3 app[], $4 scope_id[],
-- $5 effect_key[], $6 usage_subject[], $7 source_id[], $8 task_type[], $9 legacy
-- request_digest[] (after the canonical one, as in submit.sql), $10 input[],
-- $11 priority[], $12 max_attempts[], $13 on_restart[], $14 privacy[],
-- $15 lease_seconds[], $16 attempt_timeout_seconds[], $17 deadline_seconds[],
-- $18 resource[], $19 traceparent[].
-- Returns one row per item with its position `n` and submit.sql's columns, in no
-- particular order; an item whose identity's task vanished while being read has a
-- NULL outcome.
-- Locks: the owner lock (shared) of every (app, scope), the new rows, and those of
-- submit_task for the items it runs; held until the statement's transaction ends.
SELECT *
FROM tasklane.submit_tasks(
    $1::int8[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
    $8::text[],
    ARRAY(SELECT tasklane.request_digest(d.task_type, d.source_id, d.input, d.priority,
                                         d.deadline_seconds, d.max_attempts, d.on_restart,
                                         d.privacy) || d.digest
          FROM unnest($8::text[], $7::text[], $10::jsonb[], $11::int2[], $17::int8[],
                      $12::int4[], $13::text[], $14::text[], $9::bytea[])
               WITH ORDINALITY AS d (task_type, source_id, input, priority,
                                     deadline_seconds, max_attempts, on_restart, privacy,
                                     digest, n)
          ORDER BY d.n),
    $10::jsonb[], $11::int2[], $12::int4[], $13::text[], $14::text[], $15::int4[],
    $16::int4[], $17::int8[], $18::text[], $19::text[])
