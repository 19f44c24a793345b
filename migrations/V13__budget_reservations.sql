-- V13: budget reservations of in-flight attempts (issue 12, "Recheck at claim").
-- Forward-only: never edit once landed.
--
-- Admission checks a budget at submit, but usage is only known when an attempt ends, so
-- tasks admitted while the budget had room could all call the provider at once and
-- overshoot it by any amount. Before an attempt calls the provider it reserves what it
-- may consume (the request's max_tokens or the type's estimate); a reservation is
-- decided against the units spent today plus the reservations of attempts still in
-- flight, so the budget is overshot by less than one attempt's reservation (plus what
-- an attempt consumes beyond its reservation).
--
-- A reservation counts only while its attempt still holds the task: the task row has
-- the same attempt number and is running or cancelling. The settle that ends the
-- attempt charges its usage (budget_usage) in the same transaction that ends the
-- lease, so at every commit an attempt is counted either by its reservation or by its
-- charge (or, for a moment, by both: never by neither), and no hook in the settle path
-- is needed. Reservations of ended attempts are deleted lazily: by the next reservation
-- of the same budget, and by the admission pruner.
CREATE TABLE tasklane.budget_reservations (
    task_id       uuid NOT NULL,
    attempt       integer NOT NULL,
    app           text NOT NULL,
    usage_subject text NOT NULL,
    units         bigint NOT NULL CHECK (units >= 0),
    reserved_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (task_id, attempt)
);
CREATE INDEX budget_reservations_budget ON tasklane.budget_reservations (app, usage_subject);

-- Reserves p_units of the budget that pays for the attempt holding lease p_token of
-- task p_task: its usage subject's budget, or its app's background budget when it has
-- no subject (the budget admission checked). Out: outcome 'reserved', 'unlimited' (no
-- budget applies: nothing written), 'budget_exhausted' (units spent today plus what
-- in-flight attempts reserved reach the max: nothing written), 'lease_lost' or
-- 'task_gone'; limit_id, the budget; at, the time decided at.
-- A second reservation of the same attempt (a second provider call) adds to the first.
-- Locks: the budget's limit row (FOR NO KEY UPDATE), so the reservations of one budget
-- are decided one at a time (a few statements each) and concurrent ones cannot all see
-- the same room; submits only read that row and never wait on it.
CREATE FUNCTION tasklane.reserve_budget(p_task uuid, p_token uuid, p_units bigint,
                                        OUT outcome text, OUT limit_id bigint, OUT at timestamptz)
LANGUAGE plpgsql AS $$
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
