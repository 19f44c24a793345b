-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.admit, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Admission of task p_task for (p_app, p_subject; NULL subject: the app's background
-- work): walks the emergency stops (global, then the app's) and the limits whose key
-- matches (global, app, app and subject) in the order stop, capacity, rate, budget, and
-- stops at the first that refuses. A capacity limit takes a free slot (searched from a
-- random slot, so submits spread over the slots); a rate limit takes a token free since a
-- window ago; a budget compares today's spent units (UTC day) with its max. On a refusal
-- it gives back what it took (tasklane.give_back) and returns refused (emergency_stop,
-- capacity_exhausted, rate_limited, budget_exhausted), limit_id and, for a rate limit,
-- free_at: when a token frees. Admitted under a rate limit, it records the decision in
-- tasklane.admission_history. at is the time it decided; p_now overrides now() (tests
-- only).
-- Called by tasklane.submit_task and by sql/admit.sql (a retry admits its task again).
-- Locks: the capacity slot and rate tokens it takes (FOR UPDATE SKIP LOCKED: never waits
-- on another submit), until the transaction ends.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function admit: migrations/V3__admission.sql, migrations/V33__function_comments.sql
CREATE FUNCTION tasklane.admit(p_task uuid, p_app text, p_subject text, p_now timestamp with time zone, OUT refused text, OUT limit_id bigint, OUT free_at timestamp with time zone, OUT at timestamp with time zone) RETURNS record
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_subject text := coalesce(p_subject, '');
    l record;
    v_start integer;
    v_taken integer;
    v_rated boolean := false;
    -- What this call took, to give back on a refusal: capacity slots (found again by
    -- task id) and the new versions of the rate tokens it used.
    v_slots boolean := false;
    v_tokens tid[] := '{}';
    v_token tid;
BEGIN
    at := coalesce(p_now, now());
    FOR l IN
        SELECT 0 AS step, NULL::bigint AS id, 0::bigint AS max, 0 AS window_seconds, ''::text AS usage_subject
        FROM tasklane.emergency_stops e WHERE e.app IN ('', p_app)
        UNION ALL
        SELECT CASE k.kind WHEN 'capacity' THEN 1 WHEN 'rate' THEN 2 ELSE 3 END, k.id, k.max,
               k.window_seconds, k.usage_subject
        FROM tasklane.limits k
        WHERE (k.app, k.usage_subject) IN (('', ''), (p_app, ''), (p_app, v_subject))
        ORDER BY 1, 2
    LOOP
        IF l.step = 0 THEN
            refused := 'emergency_stop';
            RETURN;
        ELSIF l.step = 1 THEN
            v_start := floor(random() * greatest(l.max, 1));
            v_taken := NULL;
            WITH free AS (
                SELECT c.ctid FROM tasklane.capacity_slots c
                WHERE c.limit_id = l.id AND c.task_id IS NULL AND c.slot >= v_start
                  AND NOT EXISTS (SELECT 1 FROM tasklane.capacity_slots r WHERE r.limit_id = l.id AND r.retired)
                ORDER BY c.slot LIMIT 1 FOR UPDATE SKIP LOCKED
            )
            UPDATE tasklane.capacity_slots s SET task_id = p_task FROM free WHERE s.ctid = free.ctid
            RETURNING s.slot INTO v_taken;
            IF v_taken IS NULL THEN
                WITH free AS (
                    SELECT c.ctid FROM tasklane.capacity_slots c
                    WHERE c.limit_id = l.id AND c.task_id IS NULL AND c.slot < v_start
                      AND NOT EXISTS (SELECT 1 FROM tasklane.capacity_slots r WHERE r.limit_id = l.id AND r.retired)
                    ORDER BY c.slot LIMIT 1 FOR UPDATE SKIP LOCKED
                )
                UPDATE tasklane.capacity_slots s SET task_id = p_task FROM free WHERE s.ctid = free.ctid
                RETURNING s.slot INTO v_taken;
            END IF;
            v_slots := v_slots OR v_taken IS NOT NULL;
            IF v_taken IS NULL THEN
                PERFORM tasklane.give_back(p_task, v_slots, v_tokens);
                refused := 'capacity_exhausted';
                limit_id := l.id;
                RETURN;
            END IF;
        ELSIF l.step = 2 THEN
            v_rated := true;
            v_token := NULL;
            WITH free AS (
                SELECT t.ctid, t.used_at FROM tasklane.rate_tokens t
                WHERE t.limit_id = l.id AND t.used_at <= at - l.window_seconds * interval '1 second'
                ORDER BY t.used_at LIMIT 1 FOR UPDATE SKIP LOCKED
            )
            UPDATE tasklane.rate_tokens t SET used_at = at, prev_used_at = free.used_at, used_by = p_task
            FROM free WHERE t.ctid = free.ctid
            RETURNING t.ctid INTO v_token;
            IF v_token IS NULL THEN
                PERFORM tasklane.give_back(p_task, v_slots, v_tokens);
                refused := 'rate_limited';
                limit_id := l.id;
                -- Never before now: a free token may only be locked by an in-flight submit.
                SELECT greatest(coalesce(min(t.used_at), at), at - l.window_seconds * interval '1 second')
                       + l.window_seconds * interval '1 second' INTO free_at
                FROM tasklane.rate_tokens t WHERE t.limit_id = l.id;
                RETURN;
            END IF;
            v_tokens := v_tokens || v_token;
        -- Budgets: only the subject's own, or the background budget when there is none.
        ELSIF l.usage_subject = v_subject THEN
            IF (SELECT coalesce(sum(u.units), 0) FROM tasklane.budget_usage u
                WHERE u.app = p_app AND u.usage_subject = v_subject
                  AND u.day = (at AT TIME ZONE 'UTC')::date) >= l.max THEN
                PERFORM tasklane.give_back(p_task, v_slots, v_tokens);
                refused := 'budget_exhausted';
                limit_id := l.id;
                RETURN;
            END IF;
        END IF;
    END LOOP;
    IF v_rated THEN
        INSERT INTO tasklane.admission_history (app, usage_subject, at, task_id)
        VALUES (p_app, v_subject, at, p_task);
    END IF;
END
$$;
