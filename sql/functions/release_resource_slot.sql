-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.release_resource_slot, add a migration that replaces it, then run
-- `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The current definition of tasklane.release_resource_slot (pg_dump --schema-only, normalised).
-- The line above it names the migrations that wrote it; their comments say why.

-- function release_resource_slot: migrations/V3__admission.sql
CREATE FUNCTION tasklane.release_resource_slot() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    freed record;
BEGIN
    FOR freed IN
        WITH gone AS (DELETE FROM tasklane.resource_slots WHERE task_id = OLD.id AND retired)
        UPDATE tasklane.resource_slots s SET task_id = NULL
        WHERE s.task_id = OLD.id AND NOT s.retired
        RETURNING s.resource, s.slot,
                  EXISTS (SELECT 1 FROM tasklane.resource_slots r
                          WHERE r.resource = s.resource AND r.retired) AS lowered
    LOOP
        IF freed.lowered THEN
            WITH moved AS (
                DELETE FROM tasklane.resource_slots WHERE ctid = (
                    SELECT ctid FROM tasklane.resource_slots
                    WHERE resource = freed.resource AND retired
                    LIMIT 1 FOR UPDATE SKIP LOCKED)
                RETURNING task_id
            )
            UPDATE tasklane.resource_slots r SET task_id = moved.task_id FROM moved
            WHERE r.resource = freed.resource AND r.slot = freed.slot;
        END IF;
    END LOOP;
    IF TG_OP = 'UPDATE' THEN
        NEW.resource_slot := NULL;
        RETURN NEW;
    END IF;
    RETURN OLD;
END
$$;
