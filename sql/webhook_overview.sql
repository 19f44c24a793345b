-- The webhooks line of the overview and the pending-age gauge: endpoints (disabled
-- among them), pending notifications and the age of the oldest, failed ones kept in
-- the log. $1: where the pending rows begin in the due index (the deliverer's start,
-- which no pending row is behind but one written late, for a minute at most), or NULL
-- to read it from its front: under a snapshot held open the index keeps the entry of
-- every notification delivered since, and a count from the front steps over them all.
-- The failed rows are counted from their own index (webhook_deliveries_failed).
-- Locks: none.
SELECT (SELECT count(*) FROM tasklane.webhook_endpoints) AS endpoints,
       (SELECT count(*) FROM tasklane.webhook_endpoints WHERE disabled) AS disabled,
       p.pending, p.oldest_pending_seconds,
       (SELECT count(*) FROM tasklane.webhook_deliveries WHERE status = 'failed') AS failed
FROM (SELECT count(*) AS pending,
             coalesce(floor(extract(epoch FROM now() - min(created_at))), 0)::bigint
                 AS oldest_pending_seconds
      FROM tasklane.webhook_deliveries
      WHERE status = 'pending'
        AND next_attempt_at >= coalesce($1::timestamptz, '-infinity')) p
