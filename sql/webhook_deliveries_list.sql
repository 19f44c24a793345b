-- An endpoint's delivery log, newest first. $1 endpoint id, $2 limit. Locks: none.
SELECT d.id, d.task_id, d.event, d.status, d.attempts, d.last_status, d.last_error,
       -- In flight: when its claim runs out (the earliest another attempt may start).
       greatest(d.next_attempt_at, d.claimed_until) AS next_attempt_at, d.delivered_at
FROM tasklane.webhook_deliveries d
WHERE d.endpoint_id = $1
ORDER BY d.id DESC
LIMIT $2
