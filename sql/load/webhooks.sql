-- Progress of a webhook benchmark: notifications of app $1 delivered, all of them, and
-- the seconds from the first notification written to the last one delivered, and from
-- the last task finished to the last delivery (database clock).
-- $1 app. Locks: none.
SELECT count(*) FILTER (WHERE d.status = 'delivered') AS delivered,
       count(*) AS total,
       extract(epoch FROM max(d.delivered_at) - min(d.created_at))::float8 AS seconds,
       extract(epoch FROM max(d.delivered_at) - max(d.created_at))::float8 AS lag_seconds
FROM tasklane.webhook_deliveries d
WHERE d.app = $1
