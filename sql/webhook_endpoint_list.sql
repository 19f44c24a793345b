-- An app's endpoints by name (an app has a handful). $1 app. Locks: none.
SELECT e.id, e.name, e.url, e.events, e.disabled, e.created_at, false AS created
FROM tasklane.webhook_endpoints e
WHERE e.app = $1
ORDER BY e.name
