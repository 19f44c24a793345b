-- Retires an endpoint's current secret: it still signs for $2 seconds. Secrets whose
-- time is up go. Run after webhook_endpoint_lock or _upsert locked the endpoint, and
-- before webhook_secret_insert. $1 endpoint id, $2 grace seconds (float8).
-- Locks: the endpoint's secret rows.
WITH gone AS (
    DELETE FROM tasklane.webhook_secrets WHERE endpoint_id = $1 AND expires_at <= now()
)
UPDATE tasklane.webhook_secrets
SET expires_at = now() + $2::float8 * interval '1 second'
WHERE endpoint_id = $1 AND expires_at IS NULL
