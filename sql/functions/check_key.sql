-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.check_key, add a migration that replaces it, then run
-- `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The current definition of tasklane.check_key (pg_dump --schema-only, normalised).
-- The line above it names the migrations that wrote it; their comments say why.

-- function check_key: migrations/V12__sql_run_task.sql
CREATE FUNCTION tasklane.check_key(p_field text, p_value text, p_required boolean) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF p_value IS NULL THEN
        IF p_required THEN
            PERFORM tasklane.refuse_invalid(p_field, 'is required');
        END IF;
    ELSIF octet_length(p_value) NOT BETWEEN 1 AND 200 THEN
        PERFORM tasklane.refuse_invalid(p_field, 'must be 1 to 200 bytes');
    END IF;
END
$$;

REVOKE ALL ON FUNCTION tasklane.check_key(p_field text, p_value text, p_required boolean) FROM PUBLIC;
