-- Records the outcomes of a round of attempts in one statement, each fenced on its
-- claim as in webhook_settle.sql (a claim that ran out or was voided changes nothing).
-- $1 delivery ids (sorted, so concurrent writers lock in one order), $2 claim tokens,
-- $3 statuses (pending | delivered | failed), $4 retry delays in ms (float8),
-- $5 HTTP statuses (nullable), $6 error texts (nullable). Returns the ids whose claim held.
-- Locks: the delivery rows.
UPDATE tasklane.webhook_deliveries d
SET status = o.status,
    next_attempt_at = CASE WHEN o.status = 'pending'
                           THEN now() + o.delay_ms * interval '1 millisecond'
                           ELSE d.next_attempt_at END,
    claim_token = NULL,
    claimed_until = NULL,
    last_status = o.last_status,
    last_error = o.last_error,
    delivered_at = CASE WHEN o.status = 'delivered' THEN now() END,
    finished_at = CASE WHEN o.status <> 'pending' THEN now() END
FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::float8[], $5::int4[], $6::text[])
     AS o(id, claim_token, status, delay_ms, last_status, last_error)
WHERE d.id = o.id AND d.claim_token = o.claim_token AND d.status = 'pending'
RETURNING d.id
