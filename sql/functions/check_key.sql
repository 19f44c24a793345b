-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.check_key, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Validation for tasklane.run_task: refuses (tasklane.refuse_invalid) the key p_value of
-- field p_field when it is NULL but p_required, or not 1 to 200 bytes long.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function check_key: migrations/V12__sql_run_task.sql, migrations/V33__function_comments.sql
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
