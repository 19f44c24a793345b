-- The live token with this hash, read on every request (no cache: a revocation is seen
-- at once by every replica). $1 token_hash bytea. Locks: none.
SELECT id, app, scope_id, permissions, token_hash
FROM tasklane.api_tokens
WHERE token_hash = $1 AND revoked_at IS NULL
