-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.give_back, add a migration that replaces it, then run
-- `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The current definition of tasklane.give_back (pg_dump --schema-only, normalised).
-- The line above it names the migrations that wrote it; their comments say why.

-- function give_back: migrations/V3__admission.sql
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
