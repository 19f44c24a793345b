-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.digest_legacy, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The legacy part (a 32-byte SHA-256 computed by the binary) of a request digest: the
-- whole digest when it is only that, the bytes after the canonical part when it holds
-- both, NULL otherwise. Used by tasklane.identity_task to match tasks whose digests have
-- no canonical part.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function digest_legacy: migrations/V12__sql_run_task.sql, migrations/V33__function_comments.sql
CREATE FUNCTION tasklane.digest_legacy(p_digest bytea) RETURNS bytea
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT CASE octet_length(p_digest)
               WHEN 32 THEN p_digest
               WHEN 65 THEN substring(p_digest FROM 34 FOR 32) END
$$;
