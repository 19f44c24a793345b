-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.reserve_budget, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Reserves p_units of today's budget for the running attempt of task p_task, fenced on its
-- lease token p_token, before a call that spends them (sql/call_start.sql,
-- sql/budget_reserve.sql). outcome: reserved; unlimited (no budget limit for the task's
-- app and subject); budget_exhausted (spent and reserved units reach the max); lease_lost
-- or task_gone. limit_id: the budget limit; at: when it decided.
-- Forgets, under the limit's lock, the reservations of attempts that ended, then sums
-- reservations before spent units, so an attempt settling in between counts twice,
-- never not at all.
-- Locks: the budget limit's row (FOR NO KEY UPDATE), serialising the reservations of one
-- budget; the reservation row.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function reserve_budget: migrations/V13__budget_reservations.sql, migrations/V33__function_comments.sql
CREATE FUNCTION tasklane.reserve_budget(p_task uuid, p_token uuid, p_units bigint, OUT outcome text, OUT limit_id bigint, OUT at timestamp with time zone) RETURNS record
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_app text;
    v_subject text;
    v_attempt integer;
    v_max bigint;
    v_reserved bigint;
    v_spent bigint;
BEGIN
    at := now();
    SELECT t.app, coalesce(t.usage_subject, ''), t.attempt INTO v_app, v_subject, v_attempt
    FROM tasklane.tasks t
    WHERE t.id = p_task AND t.lease_token = p_token AND t.state IN ('running', 'cancelling');
    IF NOT FOUND THEN
        outcome := CASE WHEN EXISTS (SELECT 1 FROM tasklane.tasks t WHERE t.id = p_task)
                        THEN 'lease_lost' ELSE 'task_gone' END;
        RETURN;
    END IF;
    SELECT l.id, l.max INTO limit_id, v_max
    FROM tasklane.limits l
    WHERE l.kind = 'budget' AND l.app = v_app AND l.usage_subject = v_subject
      AND l.window_seconds = 0
    FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        outcome := 'unlimited';
        RETURN;
    END IF;
    -- Under the lock: forget the reservations of attempts that ended, then sum the
    -- rest. Reservations first, spent units second: an attempt settling in between is
    -- then counted twice (harmless), never not at all.
    DELETE FROM tasklane.budget_reservations r
    WHERE r.app = v_app AND r.usage_subject = v_subject
      AND NOT EXISTS (SELECT 1 FROM tasklane.tasks t
                      WHERE t.id = r.task_id AND t.attempt = r.attempt
                        AND t.state IN ('running', 'cancelling'));
    SELECT coalesce(sum(r.units), 0) INTO v_reserved
    FROM tasklane.budget_reservations r
    WHERE r.app = v_app AND r.usage_subject = v_subject;
    SELECT coalesce(sum(u.units), 0) INTO v_spent
    FROM tasklane.budget_usage u
    WHERE u.app = v_app AND u.usage_subject = v_subject
      AND u.day = (at AT TIME ZONE 'UTC')::date;
    IF v_spent + v_reserved >= v_max THEN
        outcome := 'budget_exhausted';
        RETURN;
    END IF;
    INSERT INTO tasklane.budget_reservations AS r (task_id, attempt, app, usage_subject, units)
    VALUES (p_task, v_attempt, v_app, v_subject, p_units)
    ON CONFLICT (task_id, attempt) DO UPDATE SET units = r.units + excluded.units;
    outcome := 'reserved';
END
$$;
