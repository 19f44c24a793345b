-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.refuse_invalid, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Raises the validation error of the SQL API: SQLSTATE TL422, message '<field>:
-- <message>', detail validation_failed, column p_field. Used by tasklane.run_task and
-- check_key.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function refuse_invalid: migrations/V12__sql_run_task.sql, migrations/V33__function_comments.sql
CREATE FUNCTION tasklane.refuse_invalid(p_field text, p_message text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RAISE EXCEPTION '%: %', p_field, p_message
        USING ERRCODE = 'TL422', DETAIL = 'validation_failed', COLUMN = p_field;
END
$$;

REVOKE ALL ON FUNCTION tasklane.refuse_invalid(p_field text, p_message text) FROM PUBLIC;
