-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.refuse_invalid, add a migration that replaces it, then run
-- `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The current definition of tasklane.refuse_invalid (pg_dump --schema-only, normalised).
-- The line above it names the migrations that wrote it; their comments say why.

-- function refuse_invalid: migrations/V12__sql_run_task.sql
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
