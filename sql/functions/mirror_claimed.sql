-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.mirror_claimed, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Marks the mirror rows (tasklane.task_queue) of the tasks a claim just took running,
-- each with its lease's end (p_lease_ends[i] for p_ids[i]); returns how many it wrote.
-- Called by the claim statement (sql/claim.sql, the `mirrored` step), which then tells
-- the mirror's update trigger to skip those rows. Plans without sequential scans (under
-- a held snapshot the mirror's statistics invite a scan of its whole heap for a handful
-- of ids) and without bitmap scans, as the claims plan: one primary-key probe an id.
-- Locks: the mirror rows (the claim holds their tasks' rows already).
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function mirror_claimed: migrations/V53__claim_mirror_without_scans.sql, migrations/V57__switched_functions_plan_once.sql
CREATE FUNCTION tasklane.mirror_claimed(p_ids uuid[], p_lease_ends timestamp with time zone[]) RETURNS TABLE(written bigint)
    LANGUAGE plpgsql
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
BEGIN
    RETURN QUERY
    WITH updated AS (
        UPDATE tasklane.task_queue q
        SET state = 'running', lease_expires_at = (p_lease_ends)[array_position(p_ids, q.id)]
        WHERE q.id = ANY (p_ids)
        RETURNING 1
    )
    SELECT count(*) FROM updated;
END
$$;
