-- Deletes a scope's tasks (or one exact source's) through the SQL API, in the caller's
-- transaction, optionally fencing the scope.
-- $1 app, $2 scope_id, $3 source_id (nullable: whole scope), $4 fence boolean.
-- Returns the number of deleted tasks.
-- Locks: the owner advisory lock EXCLUSIVELY until the transaction ends, the deleted
-- rows, the fence row (see sql/api/delete_tasks.sql).
SELECT tasklane.delete_tasks($1, $2, $3, $4) AS deleted
