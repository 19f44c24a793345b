-- Deletes an app's endpoint by name, with its secrets (ON DELETE CASCADE) and its
-- deliveries (no foreign key: its per-row check would cost every terminal transition
-- a query and a lock). $1 app, $2 name. Returns the id when there was one.
-- A notification a concurrent terminal transition writes for the endpoint after this
-- statement's snapshot is deleted by the deliverer's claim (sql/webhook_claim.sql).
-- Locks: the endpoint row, its secret and delivery rows.
WITH endpoint AS (
    DELETE FROM tasklane.webhook_endpoints WHERE app = $1 AND name = $2 RETURNING id
), log AS (
    DELETE FROM tasklane.webhook_deliveries d USING endpoint
    WHERE d.endpoint_id = endpoint.id
)
SELECT id FROM endpoint
