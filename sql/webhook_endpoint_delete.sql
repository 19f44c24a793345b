-- Deletes an app's endpoint by name, with its secrets and deliveries (ON DELETE
-- CASCADE). $1 app, $2 name. Returns the id when there was one.
-- Locks: the endpoint row and the rows that cascade.
DELETE FROM tasklane.webhook_endpoints WHERE app = $1 AND name = $2 RETURNING id
