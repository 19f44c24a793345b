-- One endpoint of an app by name. $1 app, $2 name. Locks: none.
SELECT e.id, e.name, e.url, e.events, e.disabled, e.created_at, false AS created
FROM tasklane.webhook_endpoints e
WHERE e.app = $1 AND e.name = $2
