-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.release_capacity, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Trigger function of tasks_release_capacity (AFTER UPDATE OF state, per row, when a task
-- holding capacity reaches a final state) and tasks_release_capacity_on_delete (AFTER
-- DELETE, per row, when it is deleted unfinished): gives back the task's capacity slots. A
-- retired slot (its limit was lowered) is deleted; a live one is freed, or, when its limit
-- still has retired slots, handed to a task holding a retired one, whose retired slot is
-- deleted instead, so a lowered limit converges as tasks end.
-- Locks: the task's slots and one retired slot of the limit (SKIP LOCKED: a locked one is
-- being released by its own task).
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function release_capacity: migrations/V3__admission.sql, migrations/V33__function_comments.sql
CREATE FUNCTION tasklane.release_capacity() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    freed record;
BEGIN
    -- One statement: retired slots go, the others become free, and each freed slot says
    -- whether its limit still has retired slots (a task holds one slot per limit, so
    -- the statement's own deletion never matters to that answer).
    FOR freed IN
        WITH gone AS (DELETE FROM tasklane.capacity_slots WHERE task_id = OLD.id AND retired)
        UPDATE tasklane.capacity_slots c SET task_id = NULL
        WHERE c.task_id = OLD.id AND NOT c.retired
        RETURNING c.limit_id, c.slot,
                  EXISTS (SELECT 1 FROM tasklane.capacity_slots r
                          WHERE r.limit_id = c.limit_id AND r.retired) AS lowered
    LOOP
        IF freed.lowered THEN
            -- SKIP LOCKED: a locked retired row is being released by its own task.
            WITH moved AS (
                DELETE FROM tasklane.capacity_slots WHERE ctid = (
                    SELECT ctid FROM tasklane.capacity_slots
                    WHERE limit_id = freed.limit_id AND retired
                    LIMIT 1 FOR UPDATE SKIP LOCKED)
                RETURNING task_id
            )
            UPDATE tasklane.capacity_slots c SET task_id = moved.task_id FROM moved
            WHERE c.limit_id = freed.limit_id AND c.slot = freed.slot;
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;
