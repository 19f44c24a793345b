-- Lifts a scope fence through the SQL API.
-- $1 app, $2 scope_id. Returns whether a fence was lifted. Locks: the fence row.
SELECT tasklane.lift_fence($1, $2) AS lifted
