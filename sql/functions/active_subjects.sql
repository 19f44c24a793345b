-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.active_subjects, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The number of usage subjects ('' counts as one) of app p_app with claimable tasks of
-- type p_task_type at priority p_priority at or above turn p_floor (the claims' floor),
-- counted up to p_cap. The subjects in p_named (those a submit names) are probed each on
-- its own from its last entry down to the floor; the ranges between them by a skip scan of
-- task_queue_turns (one probe per subject found), which steps over the entries below the
-- floor of the subjects it passes. Called by tasklane.take_turns.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function active_subjects: migrations/V38__fair_turns.sql, migrations/V47__held_snapshot_plans.sql, migrations/V49__held_snapshot_lookups.sql, migrations/V55__subjects_counted_from_the_floor.sql, migrations/V57__switched_functions_plan_once.sql
CREATE FUNCTION tasklane.active_subjects(p_task_type text, p_priority smallint, p_app text, p_floor double precision, p_cap integer, p_named text[]) RETURNS integer
    LANGUAGE plpgsql STABLE
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
    -- The named subjects, highest first: the walk goes down from the top.
    named text[] := ARRAY(SELECT DISTINCT s FROM unnest(p_named) AS s
                          WHERE s IS NOT NULL ORDER BY s DESC);
    i integer := 1;
    -- The walk's upper bound (exclusive); NULL above every subject.
    upper text;
    next_subject text;
    counted integer := 0;
BEGIN
    LOOP
        -- The highest subject with a claimable task at or above the floor below upper
        -- and above the next named subject: one probe backwards, which steps over the
        -- entries below the floor of the subjects in that range without a visit to the
        -- table. Four statements for the four combinations of bounds, so each plan
        -- reads the index from its bounds.
        IF upper IS NULL AND i > cardinality(named) THEN
            SELECT q.subject INTO next_subject
            FROM tasklane.task_queue q
            WHERE q.task_type = p_task_type AND q.priority = p_priority AND q.app = p_app
              AND q.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
              AND q.turn >= p_floor
            ORDER BY q.subject DESC, q.turn DESC
            LIMIT 1;
        ELSIF upper IS NULL THEN
            SELECT q.subject INTO next_subject
            FROM tasklane.task_queue q
            WHERE q.task_type = p_task_type AND q.priority = p_priority AND q.app = p_app
              AND q.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
              AND q.subject > named[i] AND q.turn >= p_floor
            ORDER BY q.subject DESC, q.turn DESC
            LIMIT 1;
        ELSIF i > cardinality(named) THEN
            SELECT q.subject INTO next_subject
            FROM tasklane.task_queue q
            WHERE q.task_type = p_task_type AND q.priority = p_priority AND q.app = p_app
              AND q.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
              AND q.subject < upper AND q.turn >= p_floor
            ORDER BY q.subject DESC, q.turn DESC
            LIMIT 1;
        ELSE
            SELECT q.subject INTO next_subject
            FROM tasklane.task_queue q
            WHERE q.task_type = p_task_type AND q.priority = p_priority AND q.app = p_app
              AND q.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
              AND q.subject < upper AND q.subject > named[i] AND q.turn >= p_floor
            ORDER BY q.subject DESC, q.turn DESC
            LIMIT 1;
        END IF;
        IF FOUND THEN
            counted := counted + 1;
            EXIT WHEN counted >= p_cap;
            upper := next_subject;
            CONTINUE;
        END IF;
        EXIT WHEN i > cardinality(named);
        -- The named subject itself, from its last entry down to the floor (a bound of
        -- this scan): the entries of its tasks claimed before the floor are not read.
        PERFORM 1
        FROM tasklane.task_queue q
        WHERE q.task_type = p_task_type AND q.priority = p_priority AND q.app = p_app
          AND q.state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback')
          AND q.subject = named[i] AND q.turn >= p_floor
        ORDER BY q.turn DESC
        LIMIT 1;
        IF FOUND THEN
            counted := counted + 1;
            EXIT WHEN counted >= p_cap;
        END IF;
        upper := named[i];
        i := i + 1;
    END LOOP;
    RETURN counted;
END
$$;
