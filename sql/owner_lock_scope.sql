-- Takes the owner lock of (app, scope) shared for the rest of the transaction, so owner
-- deletion (which takes it exclusively) and a retry serialize like a submit does. (A
-- submit takes the same lock inside tasklane.submit_task.)
-- $1 app, $2 scope_id.
-- Locks: pg_advisory_xact_lock_shared(tasklane.owner_key(app, scope)).
SELECT pg_advisory_xact_lock_shared(tasklane.owner_key($1, $2))::text
