-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.give_back, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Undoes what one tasklane.admit call took before it refused: frees the capacity slots of
-- task p_task when p_slots, and puts the rate tokens at p_tokens (their new row versions)
-- back to their previous use time. Called only by tasklane.admit, on rows it has locked.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function give_back: migrations/V3__admission.sql, migrations/V33__function_comments.sql
CREATE FUNCTION tasklane.give_back(p_task uuid, p_slots boolean, p_tokens tid[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF p_slots THEN
        UPDATE tasklane.capacity_slots SET task_id = NULL WHERE task_id = p_task;
    END IF;
    IF cardinality(p_tokens) > 0 THEN
        UPDATE tasklane.rate_tokens SET used_at = coalesce(prev_used_at, '-infinity'), prev_used_at = NULL, used_by = NULL
        WHERE ctid = ANY (p_tokens);
    END IF;
END
$$;
