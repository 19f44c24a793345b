-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.digest_legacy, add a migration that replaces it, then run
-- `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The current definition of tasklane.digest_legacy (pg_dump --schema-only, normalised).
-- The line above it names the migrations that wrote it; their comments say why.

-- function digest_legacy: migrations/V12__sql_run_task.sql
CREATE FUNCTION tasklane.digest_legacy(p_digest bytea) RETURNS bytea
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT CASE octet_length(p_digest)
               WHEN 32 THEN p_digest
               WHEN 65 THEN substring(p_digest FROM 34 FOR 32) END
$$;
