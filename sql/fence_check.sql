-- Whether a scope is fenced (its owner deleted with fence): submit refuses new tasks.
-- Run after the owner lock is taken shared, so a concurrent deletion has either
-- committed its fence (seen here, READ COMMITTED) or not started.
-- $1 app, $2 scope_id. Locks: none.
SELECT EXISTS (SELECT 1 FROM tasklane.scope_fences WHERE app = $1 AND scope_id = $2) AS fenced
