-- Admission (DESIGN §3 step 4) and resource slots (DESIGN §4): limits, their
-- reservations, the emergency stop, usage records and refusal counts.
-- Forward-only: never edit once landed; add a new V<n> file instead.
--
-- Design: every reservation is a row of its own, never a shared counter. A capacity
-- limit of n is n slot rows; a submit takes a free one with SKIP LOCKED and writes the
-- task id into it, and the transaction that makes the task terminal (or deletes it)
-- frees it through a trigger. Submits and completions therefore never queue on one hot
-- row, and the count of holders can never exceed the slot rows. A rate limit of n per
-- window is n token rows, each remembering when it last admitted: a token is reusable
-- only once its last use has left the window, so any window holds at most n
-- admissions. Resource slots work like capacity slots, taken in the claim statement.

-- What a task holds, so the triggers fire only for tasks that hold something.
ALTER TABLE tasklane.tasks
    ADD COLUMN resource text,
    ADD COLUMN resource_slot integer,
    ADD COLUMN holds_capacity boolean NOT NULL DEFAULT false;

-- Claimable tasks that need a resource slot, for the claim's choice of resources.
CREATE INDEX tasks_claimable_resource ON tasklane.tasks (resource)
    WHERE resource IS NOT NULL AND state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback');

-- The advisory-lock key of a task identity, as the two int4 halves: two-key advisory
-- locks live in a keyspace of their own, so an identity can never collide with an owner
-- key (tasklane.owner_key, one bigint). A submit try-locks it before admission; a
-- concurrent duplicate finds it taken, waits for the first submit to end and joins its
-- task instead of taking (or being refused) reservations of its own.
CREATE FUNCTION tasklane.identity_key(p_app text, p_scope text, p_effect_key text, p_subject text) RETURNS integer[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ARRAY[('x' || substr(h, 1, 8))::bit(32)::integer, ('x' || substr(h, 9, 8))::bit(32)::integer]
    FROM (SELECT encode(sha256(convert_to(
              concat_ws(chr(31), p_app, p_scope, p_effect_key, coalesce(chr(30) || p_subject, '')),
              'UTF8')), 'hex') AS h) d
$$;

-- Limits set by admins. '' stands for "any": app '' is global, usage_subject '' is the
-- app as a whole (for budgets: the app's background budget, paying for tasks without a
-- subject). window_seconds is 0 except for rate limits.
CREATE TABLE tasklane.limits (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind           text NOT NULL CHECK (kind IN ('capacity', 'rate', 'budget')),
    app            text NOT NULL DEFAULT '',
    usage_subject  text NOT NULL DEFAULT '',
    window_seconds integer NOT NULL DEFAULT 0 CHECK (window_seconds BETWEEN 0 AND 86400),
    max            bigint NOT NULL CHECK (max >= 0),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT limits_key UNIQUE (kind, app, usage_subject, window_seconds),
    CHECK (usage_subject = '' OR app <> ''),
    CHECK (kind <> 'budget' OR app <> ''),
    CHECK ((kind = 'rate') = (window_seconds > 0))
);

-- One row per unit of a capacity limit. A held slot names its task; a retired slot
-- (the limit was lowered below what is held) is deleted when its task lets go, a freed
-- slot passes to the holder of a retired one, and while any retired slot of a limit
-- exists no free slot of it is handed out.
CREATE TABLE tasklane.capacity_slots (
    limit_id bigint NOT NULL REFERENCES tasklane.limits (id) ON DELETE CASCADE,
    slot     integer NOT NULL,
    task_id  uuid,
    retired  boolean NOT NULL DEFAULT false,
    PRIMARY KEY (limit_id, slot)
);
CREATE INDEX capacity_slots_free ON tasklane.capacity_slots (limit_id, slot) WHERE task_id IS NULL;
CREATE INDEX capacity_slots_task ON tasklane.capacity_slots (task_id) WHERE task_id IS NOT NULL;
CREATE INDEX capacity_slots_retired ON tasklane.capacity_slots (limit_id) WHERE retired;

-- One row per admission a rate limit allows per window; used_at is its last admission.
-- used_by/prev_used_at let a submit that does not go through (refused by a later
-- check, or beaten by a concurrent duplicate) give its token back as it was.
CREATE TABLE tasklane.rate_tokens (
    limit_id     bigint NOT NULL REFERENCES tasklane.limits (id) ON DELETE CASCADE,
    token        integer NOT NULL,
    -- '-infinity' for a token never used: NOT NULL keeps "free since" a plain range
    -- condition on the index, so a full window is seen at its first entry.
    used_at      timestamptz NOT NULL DEFAULT '-infinity',
    used_by      uuid,
    prev_used_at timestamptz
);
-- The only index: every use rewrites the row (used_at is indexed, so no HOT update),
-- and each index more is one more insert per admission. Tokens are found by this
-- index and updated by ctid; token numbers only label them.
CREATE INDEX rate_tokens_oldest ON tasklane.rate_tokens (limit_id, used_at);

-- Admissions of rate-limited apps and subjects in the last 24 h (pruned after), from
-- which a newly set rate limit starts. usage_subject '' = none.
CREATE TABLE tasklane.admission_history (
    app           text NOT NULL,
    usage_subject text NOT NULL,
    at            timestamptz NOT NULL,
    task_id       uuid NOT NULL
);
-- Append-mostly in time order: one BRIN index serves pruning, seeding a new rate limit
-- (rare) and unadmit (which looks only at this transaction's now()), and costs next to
-- nothing per admission.
CREATE INDEX admission_history_at ON tasklane.admission_history USING brin (at);

-- Usage units spent per UTC day, striped so completions do not queue on one row.
CREATE TABLE tasklane.budget_usage (
    app           text NOT NULL,
    usage_subject text NOT NULL,
    day           date NOT NULL,
    stripe        smallint NOT NULL,
    units         bigint NOT NULL,
    PRIMARY KEY (app, usage_subject, day, stripe)
);

-- Emergency stops: app '' is global.
CREATE TABLE tasklane.emergency_stops (
    app        text PRIMARY KEY,
    enabled_at timestamptz NOT NULL DEFAULT now()
);

-- Refusals per UTC day, code and app, striped; written outside the refused
-- transaction (which leaves nothing behind).
CREATE TABLE tasklane.refusals (
    day    date NOT NULL,
    code   text NOT NULL,
    app    text NOT NULL,
    stripe smallint NOT NULL,
    count  bigint NOT NULL,
    PRIMARY KEY (day, code, app, stripe)
);

-- Execution resources and their slots (DESIGN §4). A resource without a row here is
-- unlimited.
CREATE TABLE tasklane.resources (
    name       text PRIMARY KEY,
    slots      integer NOT NULL CHECK (slots >= 0),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE tasklane.resource_slots (
    resource text NOT NULL REFERENCES tasklane.resources (name) ON DELETE CASCADE,
    slot     integer NOT NULL,
    task_id  uuid,
    retired  boolean NOT NULL DEFAULT false,
    PRIMARY KEY (resource, slot)
);
CREATE INDEX resource_slots_free ON tasklane.resource_slots (resource, slot) WHERE task_id IS NULL;
CREATE INDEX resource_slots_task ON tasklane.resource_slots (task_id) WHERE task_id IS NOT NULL;
CREATE INDEX resource_slots_retired ON tasklane.resource_slots (resource) WHERE retired;

-- Capacity comes back in the transaction that ends the task: a terminal transition or
-- a deletion. A retired slot goes away instead of becoming free; a freed slot of a
-- limit that still has retired slots is handed to the holder of one of them (whose
-- retired row goes), so a lowered limit is exact both ways: nothing is admitted while
-- more than the limit is held, and admission resumes as soon as fewer are.
CREATE FUNCTION tasklane.release_capacity() RETURNS trigger
LANGUAGE plpgsql AS $$
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

CREATE TRIGGER tasks_release_capacity
    AFTER UPDATE OF state ON tasklane.tasks
    FOR EACH ROW
    WHEN (OLD.holds_capacity
          AND NEW.state IN ('succeeded', 'failed', 'cancelled')
          AND OLD.state NOT IN ('succeeded', 'failed', 'cancelled'))
    EXECUTE FUNCTION tasklane.release_capacity();

CREATE TRIGGER tasks_release_capacity_on_delete
    AFTER DELETE ON tasklane.tasks
    FOR EACH ROW
    WHEN (OLD.holds_capacity AND OLD.state NOT IN ('succeeded', 'failed', 'cancelled'))
    EXECUTE FUNCTION tasklane.release_capacity();

-- A resource slot comes back whenever its task stops running (settled, retried, handed
-- back, recovered after its lease expired) or is deleted; retired slots are handled as
-- in tasklane.release_capacity. tasks.resource_slot only marks that the task holds a
-- slot (a lowered resource may move it to another slot row).
CREATE FUNCTION tasklane.release_resource_slot() RETURNS trigger
LANGUAGE plpgsql AS $$
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

CREATE TRIGGER tasks_release_resource_slot
    BEFORE UPDATE OF state ON tasklane.tasks
    FOR EACH ROW
    WHEN (OLD.resource_slot IS NOT NULL AND NEW.state NOT IN ('running', 'cancelling'))
    EXECUTE FUNCTION tasklane.release_resource_slot();

CREATE TRIGGER tasks_release_resource_slot_on_delete
    BEFORE DELETE ON tasklane.tasks
    FOR EACH ROW
    WHEN (OLD.resource_slot IS NOT NULL)
    EXECUTE FUNCTION tasklane.release_resource_slot();

-- Usage units count against the UTC day the task finished; never given back.
CREATE FUNCTION tasklane.record_usage() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tasklane.budget_usage AS u (app, usage_subject, day, stripe, units)
    VALUES (NEW.app, coalesce(NEW.usage_subject, ''),
            (coalesce(NEW.finished_at, now()) AT TIME ZONE 'UTC')::date,
            floor(random() * 8)::smallint, NEW.usage_units)
    ON CONFLICT (app, usage_subject, day, stripe) DO UPDATE SET units = u.units + excluded.units;
    RETURN NULL;
END
$$;

CREATE TRIGGER tasks_record_usage
    AFTER UPDATE OF state ON tasklane.tasks
    FOR EACH ROW
    WHEN (NEW.usage_units IS NOT NULL AND NEW.usage_units > 0
          AND NEW.state IN ('succeeded', 'failed', 'cancelled')
          AND OLD.state NOT IN ('succeeded', 'failed', 'cancelled'))
    EXECUTE FUNCTION tasklane.record_usage();

-- Resizes the slot rows of one capacity limit or resource to p_n under locks on all of
-- them (so it waits for in-flight takers): grows with free slots (un-retiring first);
-- shrinks by deleting free slots, then retiring held ones. Generic over the two slot
-- tables: p_table, its key column, the key (as text) and the key's type.
CREATE FUNCTION tasklane.resize_slots(p_table regclass, p_key_column text, p_key text, p_key_type text, p_n integer)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    k text := format('%I = $1::%s', p_key_column, p_key_type);
    total integer;
    retired_count integer;
    live integer;
    deleted integer;
BEGIN
    EXECUTE format('SELECT count(*), count(*) FILTER (WHERE retired)
                    FROM (SELECT retired FROM %s WHERE %s FOR UPDATE) s', p_table, k)
        INTO total, retired_count USING p_key;
    live := total - retired_count;
    IF p_n >= live THEN
        EXECUTE format('UPDATE %s SET retired = false WHERE %s AND slot IN (
                            SELECT slot FROM %s WHERE %s AND retired ORDER BY slot LIMIT $2)',
                       p_table, k, p_table, k)
            USING p_key, p_n - live;
        live := least(p_n, total);
        IF p_n > live THEN
            EXECUTE format('INSERT INTO %s (%I, slot)
                            SELECT $1::%s, coalesce((SELECT max(slot) FROM %s WHERE %s), -1) + g
                            FROM generate_series(1, $2) g', p_table, p_key_column, p_key_type, p_table, k)
                USING p_key, p_n - live;
        END IF;
        RETURN;
    END IF;
    EXECUTE format('WITH gone AS (
                        DELETE FROM %s WHERE %s AND slot IN (
                            SELECT slot FROM %s WHERE %s AND task_id IS NULL ORDER BY slot DESC LIMIT $2)
                        RETURNING 1)
                    SELECT count(*) FROM gone', p_table, k, p_table, k)
        INTO deleted USING p_key, live - p_n;
    IF live - deleted > p_n THEN
        EXECUTE format('UPDATE %s SET retired = true WHERE %s AND slot IN (
                            SELECT slot FROM %s WHERE %s AND NOT retired ORDER BY slot DESC LIMIT $2)',
                       p_table, k, p_table, k)
            USING p_key, live - deleted - p_n;
    END IF;
END
$$;

-- Gives back what tasklane.admit took for p_task: capacity slots, rate tokens (to
-- their previous use) and its history row, for a submit that lost its identity to a
-- concurrent duplicate after all (a join consumes nothing). Rare: duplicates normally
-- wait on the identity lock; refusals inside admit use tasklane.give_back.
CREATE FUNCTION tasklane.unadmit(p_task uuid, p_app text, p_subject text)
RETURNS void
LANGUAGE sql AS $$
    UPDATE tasklane.capacity_slots SET task_id = NULL WHERE task_id = p_task;
    UPDATE tasklane.rate_tokens SET used_at = coalesce(prev_used_at, '-infinity'), prev_used_at = NULL, used_by = NULL
    WHERE used_by = p_task AND used_at = now()  -- admit used this transaction's now()
      AND limit_id IN (SELECT id FROM tasklane.limits WHERE kind = 'rate'
                       AND (app, usage_subject) IN (('', ''), (p_app, ''), (p_app, coalesce(p_subject, ''))));
    -- tasklane.admit wrote it at this transaction's now() (p_now is for tests only).
    DELETE FROM tasklane.admission_history
    WHERE at = now() AND task_id = p_task;
$$;

-- Gives back, within tasklane.admit, what it took before a later check refused: the
-- capacity slots held by p_task (if any were taken) and the rate tokens at p_tokens
-- (the versions it wrote), each back to its previous use. Cheap on purpose: a refusal
-- storm must not cost more than admissions.
CREATE FUNCTION tasklane.give_back(p_task uuid, p_slots boolean, p_tokens tid[])
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF p_slots THEN
        UPDATE tasklane.capacity_slots SET task_id = NULL WHERE task_id = p_task;
    END IF;
    IF cardinality(p_tokens) > 0 THEN
        UPDATE tasklane.rate_tokens SET used_at = coalesce(prev_used_at, '-infinity'), prev_used_at = NULL, used_by = NULL
        WHERE ctid = ANY (p_tokens);
    END IF;
END
$$;

-- Admission of one new task (DESIGN §3 step 4), in the submit transaction, in order:
-- emergency stop, capacity (global, app, subject), rate (same keys, every window),
-- budget (the subject's, or the app's background budget for a task without one). One
-- query reads the stops and limits that apply, in that order; with none it is the whole
-- cost. Takes what it admits with (capacity slots, rate tokens, a history row); a
-- refusal gives all of it back first (tasklane.give_back), so nothing is left behind.
-- p_now replaces now() (tests move the clock with it).
-- Out: refused (NULL: admitted, else the stable code), the refusing limit, free_at
-- (rate: when its oldest token leaves the window), at (the time used).
-- Never waits on a lock: slots and tokens are taken with SKIP LOCKED. A capacity slot
-- search starts at a random slot so concurrent submits spread over the rows, and finds
-- nothing while the limit has retired slots (it was lowered below what is held).
CREATE FUNCTION tasklane.admit(p_task uuid, p_app text, p_subject text, p_now timestamptz,
                               OUT refused text, OUT limit_id bigint, OUT free_at timestamptz,
                               OUT at timestamptz)
LANGUAGE plpgsql AS $$
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

-- Sets one limit (creating it, or changing its max) with its reservation rows, as one
-- admin step. Capacity: slot rows (tasklane.resize_slots). Rate: token rows; a new
-- limit starts from the admission history of its key within its window (the most
-- recent admissions first), a lowered one keeps its most recent tokens, so no window
-- ever holds more admissions than the new max. Returns the limit id.
-- Locks: the limit row, then its slots or tokens FOR UPDATE (waits for in-flight takers).
CREATE FUNCTION tasklane.set_limit(p_kind text, p_app text, p_subject text, p_window integer, p_max bigint)
RETURNS bigint
LANGUAGE plpgsql AS $$
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

-- Sets a resource's slot count with its slot rows. Locks: the resource row, its slots.
CREATE FUNCTION tasklane.set_resource(p_name text, p_slots integer)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tasklane.resources AS r (name, slots) VALUES (p_name, p_slots)
    ON CONFLICT (name) DO UPDATE SET slots = excluded.slots, updated_at = now();
    PERFORM tasklane.resize_slots('tasklane.resource_slots', 'resource', p_name, 'text', p_slots);
END
$$;
