-- Locks an app's endpoint by name before its secrets change (rotation), and returns it.
-- $1 app, $2 name. Locks: the endpoint row until the transaction ends, so concurrent
-- rotations of one endpoint run one after the other.
SELECT e.id, e.name, e.url, e.events, e.disabled, e.created_at, false AS created
FROM tasklane.webhook_endpoints e
WHERE e.app = $1 AND e.name = $2
FOR UPDATE
