-- Stores a new API token (only its SHA-256).
-- $1 id, $2 app, $3 scope_id (nullable), $4 permissions text[], $5 name (nullable),
-- $6 token_hash bytea. Locks: the new row.
INSERT INTO tasklane.api_tokens (id, app, scope_id, permissions, name, token_hash)
VALUES ($1, $2, $3, $4, $5, $6)
