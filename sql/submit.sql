-- Submits one task, or answers with the task that already has its identity: one call
-- of tasklane.submit_task (sql/functions/submit_task.sql), which runs lookup, owner and
-- identity locks, fence, admission and insert in that order. On its own it is its own
-- transaction; inside an application's transaction its locks last until that ends.
-- $1 id, $2 app, $3 scope_id, $4 effect_key, $5 usage_subject (nullable), $6 source_id
-- (nullable), $7 task_type, $8 the legacy request digest (32 bytes, SHA-256 of
-- serde_json's text, computed in Rust; sent after the canonical one, which PostgreSQL
-- computes, so tasks that carry only a legacy digest and older binaries keep
-- matching), $9 input, $10 priority, $11 max_attempts,
-- $12 on_restart, $13 privacy, $14 lease_seconds, $15 attempt_timeout_seconds,
-- $16 deadline_seconds (nullable), $17 resource (nullable), $18 traceparent (nullable).
-- Returns outcome, the refusal (refused, refused_limit, free_at, decided_at) and the
-- task's view columns; no row when the identity's task vanished while being read.
-- Locks: pg_advisory_xact_lock_shared(owner_key(app, scope)), the identity's advisory
-- lock (waited for when a duplicate is in flight), admission's reservations, the new row.
SELECT s.outcome, s.refused, s.refused_limit, s.free_at, s.decided_at, (s.task).*
FROM tasklane.submit_task($1, $2, $3, $4, $5, $6, $7,
                          tasklane.request_digest($7::text, $6::text, $9::jsonb, $10::int2, $16::int8,
                                                  $11::int4, $12::text, $13::text) || $8::bytea,
                          $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) s
