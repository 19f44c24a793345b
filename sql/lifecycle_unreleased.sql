-- One keyset page of (scope_id, source_id) pairs with unreleased tasks, through the SQL
-- API.
-- $1 app, $2 after_scope_id (nullable: first page), $3 after_source_id (nullable),
-- $4 limit (clamped to 1..100 by the function).
-- Locks: none.
SELECT scope_id, source_id FROM tasklane.list_unreleased_sources($1, $2, $3, $4)
