-- Submits many tasks in one statement: tasklane.submit_tasks (V16; current definition
-- in sql/functions/submit_tasks.sql), which inserts the new tasks to which no fence,
-- stop or limit applies in one multi-row insert and sends every other item through
-- tasklane.submit_task (the single submit's function) in item order, so each item is
-- answered exactly as a single submit of it would be (created, joined, replayed,
-- conflict, fenced, refused) and items are independent; an identity twice in one
-- batch joins its first item's task.
-- Every parameter is an array with one element per item, in sql/submit.sql's order:
-- $1 id[], $2 app[], $3 scope_id[], $4 effect_key[], $5 usage_subject[], $6 source_id[],
-- $7 task_type[], $8 legacy request_digest[] (after the canonical one, as in
-- submit.sql), $9 input[], $10 priority[], $11 max_attempts[], $12 on_restart[],
-- $13 privacy[], $14 lease_seconds[], $15 attempt_timeout_seconds[],
-- $16 deadline_seconds[], $17 resource[], $18 traceparent[].
-- Returns one row per item with its 1-based position `n` and submit.sql's columns, in
-- no particular order; an item whose identity's task vanished while being read has a
-- NULL outcome.
-- Locks: the owner lock (shared) of every (app, scope), the new rows, and those of
-- submit_task for the items it runs; held until the statement's transaction ends.
SELECT s.n, s.outcome, s.refused, s.refused_limit, s.free_at, s.decided_at, (s.task).*
FROM tasklane.submit_tasks(
    $1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
    ARRAY(SELECT tasklane.request_digest(d.task_type, d.source_id, d.input, d.priority,
                                         d.deadline_seconds, d.max_attempts, d.on_restart,
                                         d.privacy) || d.digest
          FROM unnest($7::text[], $6::text[], $9::jsonb[], $10::int2[], $16::int8[],
                      $11::int4[], $12::text[], $13::text[], $8::bytea[])
               WITH ORDINALITY AS d (task_type, source_id, input, priority,
                                     deadline_seconds, max_attempts, on_restart, privacy,
                                     digest, n)
          ORDER BY d.n),
    $9::jsonb[], $10::int2[], $11::int4[], $12::text[], $13::text[], $14::int4[],
    $15::int4[], $16::int8[], $17::text[], $18::text[]) s
