-- Records an attempt's outcome, fenced on the claim: a deliverer whose claim ran out
-- (another took the row) or was voided (redelivery, owner deletion) changes nothing.
-- $1 delivery id, $2 claim_token, $3 status: pending (retry) | delivered | failed,
-- $4 retry delay in ms (float8, pending only), $5 HTTP status (nullable), $6 error text
-- (nullable). Returns the id when the claim held.
-- Locks: the delivery row.
UPDATE tasklane.webhook_deliveries
SET status = $3,
    next_attempt_at = CASE WHEN $3 = 'pending'
                           THEN now() + $4::float8 * interval '1 millisecond'
                           ELSE next_attempt_at END,
    claim_token = NULL,
    claimed_until = NULL,
    last_status = $5,
    last_error = $6,
    delivered_at = CASE WHEN $3 = 'delivered' THEN now() END,
    finished_at = CASE WHEN $3 <> 'pending' THEN now() END
WHERE id = $1 AND claim_token = $2 AND status = 'pending'
RETURNING id
