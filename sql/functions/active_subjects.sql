-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.active_subjects, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The number of usage subjects ('' counts as one) of app p_app with claimable tasks of
-- type p_task_type at priority p_priority at or above turn p_floor (the claims' floor),
-- counted up to p_cap, by a skip scan of task_queue_turns (one probe per subject). Called by
-- tasklane.take_turns.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function active_subjects: migrations/V38__fair_turns.sql, migrations/V47__held_snapshot_plans.sql, migrations/V49__held_snapshot_lookups.sql
CREATE FUNCTION tasklane.active_subjects(p_task_type text, p_priority smallint, p_app text, p_floor double precision, p_cap integer) RETURNS integer
    LANGUAGE plpgsql STABLE
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $$
BEGIN
    -- One index probe per subject (task_queue_turns), up to p_cap. Backwards, from each
    -- subject's last turn: a subject's first entries are those of its tasks claimed
    -- since the last vacuum, which a forward probe would walk one by one. The turn's
    -- bound is tested on the index entry: a subject with nothing claimable at or above
    -- the floor has its entries below it stepped over in the index, each without a
    -- visit to the table (which is what a dead entry costs).
    -- PL/pgSQL, not SQL: its plans are kept for the session, where an SQL function's
    -- are made again at every call.
    RETURN (WITH RECURSIVE s(subject, n) AS (
        (SELECT q.subject, 1
         FROM tasklane.task_queue q
         WHERE q.task_type = p_task_type AND q.priority = p_priority AND q.app = p_app
           AND q.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
           AND q.turn >= p_floor
         ORDER BY q.subject DESC, q.turn DESC
         LIMIT 1)
        UNION ALL
        SELECT (SELECT q.subject
                FROM tasklane.task_queue q
                WHERE q.task_type = p_task_type AND q.priority = p_priority AND q.app = p_app
                  AND q.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
                  AND q.subject < s.subject AND q.turn >= p_floor
                ORDER BY q.subject DESC, q.turn DESC
                LIMIT 1),
               s.n + 1
        FROM s
        WHERE s.subject IS NOT NULL AND s.n < p_cap
    )
    SELECT count(subject)::integer FROM s);
END
$$;
