-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.set_limit, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Creates or changes an admission limit (sql/limit_set.sql, the admin API) and returns its
-- id. p_kind: capacity, rate or budget; p_app and p_subject: its key ('' or NULL: any);
-- p_window: a rate limit's window in seconds (0 otherwise); p_max: tasks in flight,
-- submits per window or units a day. A new capacity limit gives a slot to every task
-- already in flight under its key (retired past the max, so they count and give it back
-- when they end); a capacity limit is resized by tasklane.resize_slots. A rate limit gets
-- one token per allowed submit, a new one seeded from admission_history so the window's
-- recent submits count.
-- Locks: the limit's row; for a new capacity limit the in-flight tasks of its key; the
-- limit's slots or tokens.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function set_limit: migrations/V3__admission.sql, migrations/V33__function_comments.sql
CREATE FUNCTION tasklane.set_limit(p_kind text, p_app text, p_subject text, p_window integer, p_max bigint) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_id bigint;
    v_created boolean;
    v_have integer;
BEGIN
    INSERT INTO tasklane.limits AS l (kind, app, usage_subject, window_seconds, max)
    VALUES (p_kind, coalesce(p_app, ''), coalesce(p_subject, ''), coalesce(p_window, 0), p_max)
    ON CONFLICT ON CONSTRAINT limits_key DO UPDATE SET max = excluded.max, updated_at = now()
    RETURNING id, (xmax = 0) INTO v_id, v_created;
    IF p_kind = 'capacity' THEN
        IF v_created THEN
            -- A new limit counts the tasks already in flight for its key: each gets a slot
            -- (retired past the max) and starts giving it back when it ends. Locking
            -- them first keeps one from ending unnoticed in between.
            WITH existing AS (
                SELECT t.id FROM tasklane.tasks t
                WHERE t.state NOT IN ('succeeded', 'failed', 'cancelled')
                  AND (coalesce(p_app, '') = '' OR t.app = p_app)
                  AND (coalesce(p_subject, '') = '' OR t.usage_subject = p_subject)
                FOR UPDATE OF t
            ), seeded AS (
                INSERT INTO tasklane.capacity_slots (limit_id, slot, task_id, retired)
                SELECT v_id, n - 1, id, n > p_max
                FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM existing) e
            )
            UPDATE tasklane.tasks t SET holds_capacity = true
            FROM existing WHERE t.id = existing.id AND NOT t.holds_capacity;
        END IF;
        PERFORM tasklane.resize_slots('tasklane.capacity_slots', 'limit_id', v_id::text, 'bigint', p_max::integer);
    ELSIF p_kind = 'rate' THEN
        PERFORM 1 FROM tasklane.rate_tokens WHERE limit_id = v_id FOR UPDATE;
        SELECT count(*) INTO v_have FROM tasklane.rate_tokens WHERE limit_id = v_id;
        IF v_have > p_max THEN
            DELETE FROM tasklane.rate_tokens WHERE limit_id = v_id AND token IN (
                SELECT token FROM tasklane.rate_tokens WHERE limit_id = v_id
                ORDER BY used_at LIMIT v_have - p_max);
        ELSIF v_have < p_max THEN
            INSERT INTO tasklane.rate_tokens (limit_id, token, used_at)
            SELECT v_id, coalesce((SELECT max(token) FROM tasklane.rate_tokens WHERE limit_id = v_id), -1) + g,
                   coalesce(CASE WHEN v_created THEN recent.at END, '-infinity')
            FROM generate_series(1, (p_max - v_have)::integer) g
            LEFT JOIN (
                SELECT h.at, row_number() OVER (ORDER BY h.at DESC) AS n
                FROM tasklane.admission_history h
                WHERE (coalesce(p_app, '') = '' OR h.app = p_app)
                  AND (coalesce(p_subject, '') = '' OR h.usage_subject = p_subject)
                  AND h.at > now() - p_window * interval '1 second'
                ORDER BY h.at DESC LIMIT p_max
            ) recent ON recent.n = g;
        END IF;
    END IF;
    RETURN v_id;
END
$$;
