-- Revokes a token; a repeat keeps the first time. $1 id.
-- Returns the row when the token exists. Locks: the token row.
UPDATE tasklane.api_tokens
SET revoked_at = coalesce(revoked_at, now())
WHERE id = $1
RETURNING id
