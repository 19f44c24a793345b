-- Creates or updates an app's endpoint by name; an update enables it again (a 410 had
-- disabled it). $1 new id, $2 app, $3 name, $4 url, $5 events text[].
-- Returns the endpoint and whether this statement created it.
-- Locks: the endpoint row (ON CONFLICT DO UPDATE), until the transaction ends, so a
-- concurrent rotation of its secret waits.
INSERT INTO tasklane.webhook_endpoints AS e (id, app, name, url, events)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (app, name) DO UPDATE
SET url = excluded.url, events = excluded.events, disabled = false, updated_at = now()
RETURNING e.id, e.name, e.url, e.events, e.disabled, e.created_at, (e.id = $1) AS created
