-- Waits for a concurrent submit of the same identity to end (see owner_lock_shared.sql).
-- $1 app, $2 scope_id, $3 effect_key, $4 usage_subject (nullable).
-- Locks: pg_advisory_xact_lock on tasklane.identity_key(app, scope, effect_key, subject).
SELECT pg_advisory_xact_lock(k[1], k[2])::text FROM tasklane.identity_key($1, $2, $3, $4) AS k
