-- A receiver answered 410: its endpoint is disabled (until the app PUTs it again) and
-- its other pending notifications fail now rather than retry into a void.
-- $1 endpoint id. Returns how many pending notifications failed.
-- Locks: the endpoint row, its pending delivery rows.
WITH endpoint AS (
    UPDATE tasklane.webhook_endpoints SET disabled = true, updated_at = now()
    WHERE id = $1
    RETURNING id
), failed AS (
    UPDATE tasklane.webhook_deliveries d
    SET status = 'failed', claim_token = NULL, claimed_until = NULL, finished_at = now(),
        last_error = 'the endpoint was disabled after a 410'
    FROM endpoint
    WHERE d.endpoint_id = endpoint.id AND d.status = 'pending'
    RETURNING d.id
)
SELECT count(*) AS failed FROM failed
