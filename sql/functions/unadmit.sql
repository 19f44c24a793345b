-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.unadmit, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Undoes an admission that admitted task p_task for (p_app, p_subject) in this
-- transaction but whose insert found the identity taken: frees its capacity slots, puts
-- back the rate tokens it used at this transaction's now(), and deletes its
-- admission_history row. Called by tasklane.submit_task on rows this transaction already
-- holds.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function unadmit: migrations/V3__admission.sql, migrations/V33__function_comments.sql
CREATE FUNCTION tasklane.unadmit(p_task uuid, p_app text, p_subject text) RETURNS void
    LANGUAGE sql
    AS $$
    UPDATE tasklane.capacity_slots SET task_id = NULL WHERE task_id = p_task;
    UPDATE tasklane.rate_tokens SET used_at = coalesce(prev_used_at, '-infinity'), prev_used_at = NULL, used_by = NULL
    WHERE used_by = p_task AND used_at = now()  -- admit used this transaction's now()
      AND limit_id IN (SELECT id FROM tasklane.limits WHERE kind = 'rate'
                       AND (app, usage_subject) IN (('', ''), (p_app, ''), (p_app, coalesce(p_subject, ''))));
    -- tasklane.admit wrote it at this transaction's now() (p_now is for tests only).
    DELETE FROM tasklane.admission_history
    WHERE at = now() AND task_id = p_task;
$$;
