-- V5: the hot paths made cheaper, with the same guarantees. Submit as one statement
-- (DESIGN §3); event rows without a per-row foreign-key check; the NOTIFY of events
-- only for the rows that need one.
--
-- Submit as one statement. Lookup, owner lock, identity lock, fence,
-- admission and insert used to be six statements in an explicit transaction, each a
-- round trip with the transaction open (and its locks held) in between. As one function
-- call a submit is one round trip, and on its own it needs no BEGIN/COMMIT: the
-- statement is its transaction. An application can still call it inside its own
-- transaction (the Rust API's `submit_in`); the locks then last until that ends.

-- The task already holding an identity, judged against the request digest, as a row
-- of tasklane.submit_task's answer: 'found' (the caller joins it, or replays it when
-- terminal), 'conflict' (the identity is used by another request), or no row when there
-- is none or it vanished meanwhile (pruned or deleted: READ COMMITTED, each statement
-- sees the latest commits). A simple SQL function, so PostgreSQL inlines it into the
-- caller's cached plan.
CREATE FUNCTION tasklane.identity_task(p_app text, p_scope text, p_effect_key text,
                                       p_subject text, p_digest bytea)
RETURNS TABLE (outcome text, refused text, refused_limit bigint, free_at timestamptz,
               decided_at timestamptz, task tasklane.task_views)
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN t.request_digest = p_digest THEN 'found' ELSE 'conflict' END,
           NULL::text, NULL::bigint, NULL::timestamptz, NULL::timestamptz,
           CASE WHEN t.request_digest = p_digest THEN v END
    FROM tasklane.tasks t
    JOIN tasklane.task_views v USING (id)
    WHERE t.app = p_app AND t.scope_id = p_scope AND t.effect_key = p_effect_key
      AND (t.usage_subject = p_subject OR (t.usage_subject IS NULL AND p_subject IS NULL))
$$;

-- The owner and identity keys of V1 and V3, unchanged in value but declared STABLE, as
-- their bodies are (convert_to and concat_ws are): an IMMUTABLE SQL function with a
-- STABLE body is never inlined, so every transaction parsed and planned both bodies
-- again (~50 µs each per submit). Inlined, they are part of the caller's cached plan.
-- identity_key becomes one expression (no FROM) for the same reason.
CREATE OR REPLACE FUNCTION tasklane.owner_key(p_app text, p_scope text) RETURNS bigint
LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $$
    SELECT ('x' || substr(encode(sha256(convert_to(p_app || chr(31) || p_scope, 'UTF8')), 'hex'), 1, 16))::bit(64)::bigint
$$;

CREATE OR REPLACE FUNCTION tasklane.identity_key(p_app text, p_scope text, p_effect_key text,
                                                 p_subject text) RETURNS integer[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT ARRAY[('x' || encode(substr(sha256(convert_to(concat_ws(chr(31), p_app, p_scope,
                     p_effect_key, coalesce(chr(30) || p_subject, '')), 'UTF8')), 1, 4), 'hex'))::bit(32)::integer,
                 ('x' || encode(substr(sha256(convert_to(concat_ws(chr(31), p_app, p_scope,
                     p_effect_key, coalesce(chr(30) || p_subject, '')), 'UTF8')), 5, 4), 'hex'))::bit(32)::integer]
$$;

-- Submits one task with id p_id, or answers with the task that already has its
-- identity. One row comes back, whose outcome is:
--   'created'        the task was inserted with its task.queued event;
--   'found'          the identity's task (joined when in flight, a replay when terminal);
--   'conflict'       the identity is used by a request with another digest;
--   'scope_deleted'  the scope is fenced (410);
--   'refused'        admission refused: refused, refused_limit, free_at and decided_at
--                    say why (tasklane.admit); nothing was taken;
-- or no row at all when the identity's task vanished while it was being read (the
-- caller may submit again).
-- Order: an existing identity answers without any lock. Otherwise the owner lock is
-- taken shared (owner deletion takes it exclusively) and the identity is try-locked; if
-- a concurrent submit of it is in flight, this waits for that one to end and joins what
-- it created, so a duplicate never takes (or is refused) reservations of its own. Then
-- the fence, then admission, then the insert. Should a duplicate still win the insert
-- (it held no identity lock: an application's own transaction ordering), what admission
-- took for p_id is given back and the winner is joined.
CREATE FUNCTION tasklane.submit_task(
    p_id uuid, p_app text, p_scope text, p_effect_key text, p_subject text, p_source text,
    p_task_type text, p_digest bytea, p_input jsonb, p_priority smallint,
    p_max_attempts integer, p_on_restart text, p_privacy text, p_lease_seconds integer,
    p_attempt_timeout_seconds integer, p_deadline_seconds bigint, p_resource text)
RETURNS TABLE (outcome text, refused text, refused_limit bigint, free_at timestamptz,
               decided_at timestamptz, task tasklane.task_views)
LANGUAGE plpgsql AS $$
DECLARE
    v_key integer[];
    v_admit record;
    v_inserted uuid;
BEGIN
    -- Most submits are new: probe the identity index alone before reading any view row.
    PERFORM FROM tasklane.tasks t
    WHERE t.app = p_app AND t.scope_id = p_scope AND t.effect_key = p_effect_key
      AND (t.usage_subject = p_subject OR (t.usage_subject IS NULL AND p_subject IS NULL));
    IF FOUND THEN
        RETURN QUERY SELECT * FROM tasklane.identity_task(p_app, p_scope, p_effect_key,
                                                          p_subject, p_digest);
        RETURN;
    END IF;

    PERFORM pg_advisory_xact_lock_shared(tasklane.owner_key(p_app, p_scope));
    v_key := tasklane.identity_key(p_app, p_scope, p_effect_key, p_subject);
    IF NOT pg_try_advisory_xact_lock(v_key[1], v_key[2]) THEN
        PERFORM pg_advisory_xact_lock(v_key[1], v_key[2]);
        RETURN QUERY SELECT * FROM tasklane.identity_task(p_app, p_scope, p_effect_key,
                                                          p_subject, p_digest);
        IF FOUND THEN
            RETURN;
        END IF;
        -- The other submit was refused or rolled back: this one goes on.
    END IF;

    IF EXISTS (SELECT 1 FROM tasklane.scope_fences f
               WHERE f.app = p_app AND f.scope_id = p_scope) THEN
        RETURN QUERY SELECT 'scope_deleted'::text, NULL::text, NULL::bigint,
                            NULL::timestamptz, NULL::timestamptz, NULL::tasklane.task_views;
        RETURN;
    END IF;

    SELECT * INTO v_admit FROM tasklane.admit(p_id, p_app, p_subject, NULL);
    IF v_admit.refused IS NOT NULL THEN
        RETURN QUERY SELECT 'refused'::text, v_admit.refused, v_admit.limit_id,
                            v_admit.free_at, v_admit.at, NULL::tasklane.task_views;
        RETURN;
    END IF;

    -- holds_capacity records whether admission took capacity slots for this id, so only
    -- such tasks fire the release triggers.
    WITH inserted AS (
        INSERT INTO tasklane.tasks AS t (
            id, app, scope_id, effect_key, usage_subject, source_id, task_type,
            request_digest, input, priority, max_attempts, on_restart, privacy,
            lease_seconds, attempt_timeout_seconds, deadline_at, event_seq, resource,
            holds_capacity)
        VALUES (p_id, p_app, p_scope, p_effect_key, p_subject, p_source, p_task_type,
                p_digest, p_input, p_priority, p_max_attempts, p_on_restart, p_privacy,
                p_lease_seconds, p_attempt_timeout_seconds,
                now() + p_deadline_seconds * interval '1 second', 1, p_resource,
                EXISTS (SELECT 1 FROM tasklane.capacity_slots c WHERE c.task_id = p_id))
        ON CONFLICT ON CONSTRAINT tasks_identity DO NOTHING
        RETURNING t.id, t.created_at
    ), event AS (
        INSERT INTO tasklane.task_events (task_id, seq, type, data, at)
        SELECT i.id, 1, 'task.queued', jsonb_build_object('attempt', 0), i.created_at
        FROM inserted i
    )
    SELECT i.id INTO v_inserted FROM inserted i;

    IF v_inserted IS NULL THEN
        PERFORM tasklane.unadmit(p_id, p_app, p_subject);
        RETURN QUERY SELECT * FROM tasklane.identity_task(p_app, p_scope, p_effect_key,
                                                          p_subject, p_digest);
        RETURN;
    END IF;

    RETURN QUERY SELECT 'created'::text, NULL::text, NULL::bigint, NULL::timestamptz,
                        NULL::timestamptz, v
                 FROM tasklane.task_views v WHERE v.id = p_id;
END
$$;

-- Events without a foreign key. Every event is written by the statement that inserts or
-- updates its task row (a CTE, holding that row's lock), so an event can never point at
-- a task that does not exist; the key's check cost an index probe and a row lock (one
-- more WAL record) per event, on every submit, claim and completion. Deleting a task
-- still deletes its events, in the deleting statement, as ON DELETE CASCADE did. A
-- concurrent event writer holds the task row, so the delete waits for it and then sees
-- its events (READ COMMITTED: the trigger's statement takes a fresh snapshot).
ALTER TABLE tasklane.task_events DROP CONSTRAINT task_events_task_id_fkey;

CREATE FUNCTION tasklane.delete_task_events() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM tasklane.task_events e USING gone g WHERE e.task_id = g.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER tasks_delete_events
    AFTER DELETE ON tasklane.tasks
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION tasklane.delete_task_events();

-- The events NOTIFY (V2) per row, filtered by WHEN: queued, running and progress events
-- (most of them) no longer fire a trigger at all nor fill a transition table.
-- PostgreSQL still folds duplicate notifications within a transaction.
DROP TRIGGER task_events_notify ON tasklane.task_events;
DROP FUNCTION tasklane.notify_task_events();

CREATE FUNCTION tasklane.notify_task_event() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('tasklane_events', NEW.task_id::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER task_events_notify
    AFTER INSERT ON tasklane.task_events
    FOR EACH ROW
    WHEN (NEW.type IN ('task.succeeded', 'task.failed', 'task.cancelled', 'task.output'))
    EXECUTE FUNCTION tasklane.notify_task_event();
