-- The endpoint's new current secret. $1 endpoint id, $2 secret (whsec_...).
-- Locks: none beyond the insert (the endpoint row is locked by the caller).
INSERT INTO tasklane.webhook_secrets (endpoint_id, secret) VALUES ($1, $2)
