-- The webhooks line of the overview and the pending-age gauge: endpoints (disabled
-- among them), pending notifications and the age of the oldest, failed ones kept in
-- the log. Locks: none.
SELECT (SELECT count(*) FROM tasklane.webhook_endpoints) AS endpoints,
       (SELECT count(*) FROM tasklane.webhook_endpoints WHERE disabled) AS disabled,
       p.pending, p.oldest_pending_seconds,
       (SELECT count(*) FROM tasklane.webhook_deliveries WHERE status = 'failed') AS failed
FROM (SELECT count(*) AS pending,
             coalesce(floor(extract(epoch FROM now() - min(created_at))), 0)::bigint
                 AS oldest_pending_seconds
      FROM tasklane.webhook_deliveries WHERE status = 'pending') p
