-- Records the outcomes of a round of attempts (or of one, a 410's) in one statement,
-- each fenced on its claim: a deliverer whose claim ran out (another took the row) or
-- was voided (redelivery, owner deletion) changes nothing.
-- $1 delivery ids (sorted, so concurrent writers lock in one order), $2 claim tokens,
-- $3 statuses (pending | delivered | failed, or released: not sent, because its turn
-- came too late to finish within the claim; the row is due again at once and the
-- attempt its claim counted is taken back), $4 retry delays in ms (float8),
-- $5 HTTP statuses (nullable), $6 error texts (nullable). Returns the ids whose claim held.
-- Locks: the delivery rows.
UPDATE tasklane.webhook_deliveries d
SET status = CASE WHEN o.status = 'released' THEN 'pending' ELSE o.status END,
    attempts = d.attempts - (o.status = 'released')::int,
    next_attempt_at = CASE WHEN o.status = 'pending'
                           THEN now() + o.delay_ms * interval '1 millisecond'
                           ELSE d.next_attempt_at END,
    claim_token = NULL,
    claimed_until = NULL,
    last_status = CASE WHEN o.status = 'released' THEN d.last_status ELSE o.last_status END,
    last_error = CASE WHEN o.status = 'released' THEN d.last_error ELSE o.last_error END,
    delivered_at = CASE WHEN o.status = 'delivered' THEN now() END,
    finished_at = CASE WHEN o.status IN ('delivered', 'failed') THEN now() END
FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::float8[], $5::int4[], $6::text[])
     AS o(id, claim_token, status, delay_ms, last_status, last_error)
-- `d.id = ANY($1)` fetches exactly the round's rows by primary key; joined to the unnest
-- alone, the planner reads the whole outbox (a sequential scan of every pending row)
-- when its statistics are those of a smaller one. The claim token alone fences: a
-- notification holds one only while pending (CHECK
-- webhook_deliveries_claim_only_while_pending). A test of the status here is a filter
-- the planner estimates from statistics, which, like a state test in the batch settle
-- of tasks, makes it expect one row and re-run the unnest for each row found:
-- quadratic in the round.
WHERE d.id = ANY ($1::uuid[]) AND d.id = o.id AND d.claim_token = o.claim_token
RETURNING d.id
