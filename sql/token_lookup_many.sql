-- The live tokens with these hashes, read for the requests gathered into one lookup
-- (no cache: a revocation committed before a request arrived is seen by its lookup).
-- $1 token_hash bytea[] (at most one row per hash: the column is unique).
-- Locks: none.
SELECT id, app, scope_id, permissions, token_hash
FROM tasklane.api_tokens
WHERE token_hash = ANY($1::bytea[]) AND revoked_at IS NULL
