-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.digest_canonical, add a migration that replaces it, then run
-- `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The current definition of tasklane.digest_canonical (pg_dump --schema-only, normalised).
-- The line above it names the migrations that wrote it; their comments say why.

-- function digest_canonical: migrations/V12__sql_run_task.sql
CREATE FUNCTION tasklane.digest_canonical(p_digest bytea) RETURNS bytea
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT CASE WHEN octet_length(p_digest) IN (33, 65) AND get_byte(p_digest, 0) = 2
                THEN substring(p_digest FROM 1 FOR 33) END
$$;
