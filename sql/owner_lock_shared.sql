-- Takes the owner lock of (app, scope) shared for the rest of the transaction, so owner
-- deletion (which takes it exclusively) and admission serialize; and try-locks the task
-- identity, answering whether it was free. Taken means a concurrent submit of the same
-- identity is in flight: the caller waits for it (identity_lock.sql) and joins its task.
-- $1 app, $2 scope_id, $3 effect_key, $4 usage_subject (nullable).
-- Locks: pg_advisory_xact_lock_shared(tasklane.owner_key(app, scope)),
-- pg_try_advisory_xact_lock on tasklane.identity_key(app, scope, effect_key, subject).
SELECT pg_advisory_xact_lock_shared(tasklane.owner_key($1, $2))::text AS owner,
       pg_try_advisory_xact_lock(k[1], k[2]) AS identity_free
FROM tasklane.identity_key($1, $2, $3, $4) AS k
