-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.release_resource_slot, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Trigger function of tasks_release_resource_slot (BEFORE UPDATE OF state, per row, when a
-- task holding a resource slot leaves running or cancelling) and
-- tasks_release_resource_slot_on_delete (BEFORE DELETE, per row): gives back the task's
-- resource slot as tasklane.release_capacity gives back capacity (retired slots deleted, a
-- freed slot handed to a holder of a retired one), and clears the task's resource_slot.
-- Locks: the task's slot and one retired slot of the resource (SKIP LOCKED).
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function release_resource_slot: migrations/V3__admission.sql, migrations/V33__function_comments.sql
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
