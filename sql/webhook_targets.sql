-- Where and how to send the notifications a replica's own batch settle claimed for it
-- (webhooks::handoff): each endpoint's URL, whether it is disabled, and its live
-- secrets (current first), as the claim (sql/webhook_claim.sql) returns them with its
-- rows. An endpoint deleted since is absent. $1 endpoint ids. Locks: none.
SELECT e.id, e.url, e.disabled,
       coalesce(array_agg(s.secret ORDER BY s.expires_at DESC NULLS FIRST)
                FILTER (WHERE s.id IS NOT NULL), '{}') AS secrets
FROM tasklane.webhook_endpoints e
LEFT JOIN tasklane.webhook_secrets s
       ON s.endpoint_id = e.id AND (s.expires_at IS NULL OR s.expires_at > now())
WHERE e.id = ANY ($1::uuid[])
GROUP BY e.id
