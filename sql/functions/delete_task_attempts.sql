-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.delete_task_attempts, add a migration that replaces it, then run
-- `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The current definition of tasklane.delete_task_attempts (pg_dump --schema-only, normalised).
-- The line above it names the migrations that wrote it; their comments say why.

-- function delete_task_attempts: migrations/V9__task_attempts.sql
CREATE FUNCTION tasklane.delete_task_attempts() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    DELETE FROM tasklane.task_attempts a USING gone g WHERE a.task_id = g.id;
    RETURN NULL;
END
$$;
