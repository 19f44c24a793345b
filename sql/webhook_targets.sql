-- Where and how to send: each endpoint's URL, whether it is disabled, and its live
-- secrets (current first). $1 endpoint ids. Locks: none.
SELECT e.id, e.url, e.disabled,
       coalesce(array_agg(s.secret ORDER BY s.expires_at DESC NULLS FIRST)
                FILTER (WHERE s.id IS NOT NULL), '{}') AS secrets
FROM tasklane.webhook_endpoints e
LEFT JOIN tasklane.webhook_secrets s
       ON s.endpoint_id = e.id AND (s.expires_at IS NULL OR s.expires_at > now())
WHERE e.id = ANY ($1::uuid[])
GROUP BY e.id
