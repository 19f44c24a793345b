-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.digest_canonical, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The canonical part (33 bytes: format byte 2 and a SHA-256) of a stored or submitted
-- request digest, or NULL when the digest has none (a 32-byte legacy digest). Used by
-- tasklane.identity_task.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function digest_canonical: migrations/V12__sql_run_task.sql, migrations/V33__function_comments.sql
CREATE FUNCTION tasklane.digest_canonical(p_digest bytea) RETURNS bytea
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT CASE WHEN octet_length(p_digest) IN (33, 65) AND get_byte(p_digest, 0) = 2
                THEN substring(p_digest FROM 1 FOR 33) END
$$;
