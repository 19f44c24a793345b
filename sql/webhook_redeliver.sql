-- Sends a notification again: pending, due now, its schedule afresh; an attempt in
-- flight loses its claim (its outcome no longer counts). The webhook-id stays. Wakes
-- the deliverers. $1 endpoint id, $2 delivery id. Returns the id when found.
-- Locks: the delivery row.
UPDATE tasklane.webhook_deliveries
SET status = 'pending', attempts = 0, next_attempt_at = now(), claim_token = NULL,
    claimed_until = NULL, last_status = NULL, last_error = NULL, delivered_at = NULL,
    finished_at = NULL
WHERE endpoint_id = $1 AND id = $2
RETURNING id, pg_notify('tasklane_webhooks', '')::text AS notified
