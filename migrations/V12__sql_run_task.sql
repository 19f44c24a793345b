-- V12: submitting from the application's own transaction (docs/sql-api.md).
--
-- * tasklane.registered_task_types: the task types replicas serve, with the defaults a
--   submit resolves from them; every replica upserts its types at start, so the
--   database can refuse an unknown type and resolve a type's defaults by itself.
-- * One canonical request digest, computed by PostgreSQL for both doors
--   (tasklane.request_digest): the HTTP submit (sql/submit.sql, sql/submit_batch.sql)
--   and tasklane.run_task hash the same jsonb text, so the same request is the same
--   identity whichever door it came through. Version byte 0x02, then SHA-256: 33 bytes.
--   Tasks from before V12 keep their 32-byte digest (SHA-256 of serde_json's text,
--   computed in Rust); the HTTP door still sends that one after the canonical one
--   (65 bytes), so such tasks, and binaries older than V12 during a rolling upgrade,
--   keep matching. tasklane.identity_task compares the canonical parts when both sides
--   have one, the legacy parts otherwise.
-- * tasklane.run_task: POST /v1/tasks as a function, SECURITY DEFINER, with the HTTP
--   door's bounds, codes and answers; refusals are raised with SQLSTATEs of class TL.
-- * The role tasklane_app, granted exactly the SQL API (when the migrating role may
--   create roles; otherwise docs/sql-api.md has the statements).

CREATE TABLE tasklane.registered_task_types (
    name                    text PRIMARY KEY,
    max_attempts            integer NOT NULL,
    on_restart              text NOT NULL,
    privacy                 text NOT NULL,
    lease_seconds           integer NOT NULL,
    attempt_timeout_seconds integer NOT NULL,
    deadline_seconds        bigint,
    resource                text,
    -- The registering replica's input bound (its --max-input-bytes).
    input_bytes             bigint NOT NULL,
    registered_at           timestamptz NOT NULL DEFAULT now()
);

-- The value with every number written in its shortest exact form (trailing fractional
-- zeros dropped: 1.50 and 1.5, 2.0 and 2 are one number), so numbers that mean the same
-- hash the same whether serde_json (f64: `2.0`) or an application (`2`) wrote them.
CREATE FUNCTION tasklane.canonical_json(p_value jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    CASE jsonb_typeof(p_value)
        WHEN 'number' THEN
            RETURN to_jsonb(trim_scale(p_value::numeric));
        WHEN 'array' THEN
            RETURN (SELECT coalesce(jsonb_agg(tasklane.canonical_json(e.value) ORDER BY e.n),
                                    '[]'::jsonb)
                    FROM jsonb_array_elements(p_value) WITH ORDINALITY AS e (value, n));
        WHEN 'object' THEN
            RETURN (SELECT coalesce(jsonb_object_agg(o.key, tasklane.canonical_json(o.value)),
                                    '{}'::jsonb)
                    FROM jsonb_each(p_value) AS o);
        ELSE
            RETURN p_value;
    END CASE;
END
$fn$;

-- The canonical digest of a request with every default resolved: 0x02, then SHA-256 of
-- the jsonb text of {task_type, source_id, input, priority, deadline_seconds,
-- max_attempts, on_restart, privacy}. jsonb orders keys itself and keeps no
-- whitespace choices, so key order and spacing never matter; numbers are made
-- canonical only when the text shows a fractional part ending in 0 (the walk is skipped
-- for every other input).
CREATE FUNCTION tasklane.request_digest(
    p_task_type text, p_source_id text, p_input jsonb, p_priority integer,
    p_deadline_seconds bigint, p_max_attempts integer, p_on_restart text, p_privacy text)
RETURNS bytea
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
    SELECT '\x02'::bytea || sha256(convert_to(jsonb_build_object(
        'task_type', p_task_type,
        'source_id', p_source_id,
        'input', CASE WHEN p_input::text ~ '\.[0-9]*0(?![0-9])'
                      THEN tasklane.canonical_json(p_input) ELSE p_input END,
        'priority', p_priority,
        'deadline_seconds', p_deadline_seconds,
        'max_attempts', p_max_attempts,
        'on_restart', p_on_restart,
        'privacy', p_privacy)::text, 'UTF8'))
$fn$;

-- A digest's canonical part (NULL when it has none: a legacy 32-byte digest) and its
-- legacy part (NULL when it has none: a canonical digest from tasklane.run_task).
CREATE FUNCTION tasklane.digest_canonical(p_digest bytea) RETURNS bytea
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
    SELECT CASE WHEN octet_length(p_digest) IN (33, 65) AND get_byte(p_digest, 0) = 2
                THEN substring(p_digest FROM 1 FOR 33) END
$fn$;

CREATE FUNCTION tasklane.digest_legacy(p_digest bytea) RETURNS bytea
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
    SELECT CASE octet_length(p_digest)
               WHEN 32 THEN p_digest
               WHEN 65 THEN substring(p_digest FROM 34 FOR 32) END
$fn$;

-- Same requests: canonical parts equal when both digests have one, else legacy parts.
CREATE OR REPLACE FUNCTION tasklane.identity_task(p_app text, p_scope text,
        p_effect_key text, p_subject text, p_digest bytea)
RETURNS TABLE(outcome text, refused text, refused_limit bigint, free_at timestamptz,
              decided_at timestamptz, task tasklane.task_views)
LANGUAGE sql STABLE
AS $$
    SELECT CASE WHEN m.same THEN 'found' ELSE 'conflict' END,
           NULL::text, NULL::bigint, NULL::timestamptz, NULL::timestamptz,
           CASE WHEN m.same THEN v END
    FROM tasklane.tasks t
    JOIN tasklane.task_views v USING (id)
    CROSS JOIN LATERAL (SELECT coalesce(CASE
            WHEN tasklane.digest_canonical(t.request_digest) IS NOT NULL
                 AND tasklane.digest_canonical(p_digest) IS NOT NULL
            THEN tasklane.digest_canonical(t.request_digest) = tasklane.digest_canonical(p_digest)
            ELSE tasklane.digest_legacy(t.request_digest) = tasklane.digest_legacy(p_digest)
        END, false) AS same) m
    WHERE t.app = p_app AND t.scope_id = p_scope AND t.effect_key = p_effect_key
      AND (t.usage_subject = p_subject OR (t.usage_subject IS NULL AND p_subject IS NULL))
$$;

-- Raises a validation failure of `field` (SQLSTATE TL422, DETAIL validation_failed).
CREATE FUNCTION tasklane.refuse_invalid(p_field text, p_message text) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    RAISE EXCEPTION '%: %', p_field, p_message
        USING ERRCODE = 'TL422', DETAIL = 'validation_failed', COLUMN = p_field;
END
$fn$;

-- Checks an identifier's bound (1..200 bytes; NULL only when optional).
CREATE FUNCTION tasklane.check_key(p_field text, p_value text, p_required boolean)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    IF p_value IS NULL THEN
        IF p_required THEN
            PERFORM tasklane.refuse_invalid(p_field, 'is required');
        END IF;
    ELSIF octet_length(p_value) NOT BETWEEN 1 AND 200 THEN
        PERFORM tasklane.refuse_invalid(p_field, 'must be 1 to 200 bytes');
    END IF;
END
$fn$;

-- tasklane.run_task: run (submit or join) a task from the caller's transaction, exactly
-- as POST /v1/tasks would for app `app` (docs/sql-api.md). Bounds and defaults as the
-- HTTP door: the type must be registered by a replica; its defaults fill what is NULL.
-- Returns the task's id and `created` (new, queued; workers are woken at commit),
-- `joined` (the same request is in flight) or `replayed` (the same request already
-- finished). Raises, with DETAIL the stable code:
--   TL422 validation_failed (COLUMN names the field) or unknown_task_type
--   TL409 idempotency_conflict (same identity, different request) or concurrent_change
--   TL410 scope_deleted (the scope is fenced)
--   TL429 capacity_exhausted, rate_limited, budget_exhausted; TL503 emergency_stop
--         (HINT: retry after N seconds)
-- Locks: those of tasklane.submit_task (the owner lock shared, the identity's advisory
-- lock, admission's reservations, the new row), held until the caller's transaction
-- ends: a rollback leaves no task, and a concurrent submit of the same identity waits
-- for the commit or rollback.
CREATE FUNCTION tasklane.run_task(
    app text, task_type text, scope_id text, effect_key text, input jsonb,
    source_id text DEFAULT NULL, usage_subject text DEFAULT NULL,
    priority integer DEFAULT NULL, deadline_seconds bigint DEFAULT NULL,
    max_attempts integer DEFAULT NULL, on_restart text DEFAULT NULL,
    privacy text DEFAULT NULL)
RETURNS TABLE (task_id uuid, outcome text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_type tasklane.registered_task_types;
    v_priority integer := coalesce(run_task.priority, 0);
    v_deadline bigint;
    v_attempts integer;
    v_restart text;
    v_privacy text;
    v_id uuid;
    v_digest bytea;
    v_answer record;
    v_retry bigint;
BEGIN
    PERFORM tasklane.check_key('app', run_task.app, true);
    PERFORM tasklane.check_key('task_type', run_task.task_type, true);
    PERFORM tasklane.check_key('scope_id', run_task.scope_id, true);
    PERFORM tasklane.check_key('effect_key', run_task.effect_key, true);
    PERFORM tasklane.check_key('source_id', run_task.source_id, false);
    PERFORM tasklane.check_key('usage_subject', run_task.usage_subject, false);
    SELECT * INTO v_type FROM tasklane.registered_task_types r WHERE r.name = run_task.task_type;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown task type %', run_task.task_type
            USING ERRCODE = 'TL422', DETAIL = 'unknown_task_type', COLUMN = 'task_type';
    END IF;
    IF run_task.input IS NULL THEN
        PERFORM tasklane.refuse_invalid('input', 'is required');
    END IF;
    IF octet_length(run_task.input::text) > v_type.input_bytes THEN
        PERFORM tasklane.refuse_invalid('input', format('must be at most %s bytes', v_type.input_bytes));
    END IF;
    IF jsonb_path_exists(run_task.input,
                         'strict $.** ? (@.type() == "number" && (@ > 1e300 || @ < -1e300))') THEN
        PERFORM tasklane.refuse_invalid('input', 'numbers must be within ±1e300');
    END IF;
    IF v_priority NOT BETWEEN -100 AND 100 THEN
        PERFORM tasklane.refuse_invalid('priority', 'must be between -100 and 100');
    END IF;
    v_deadline := coalesce(run_task.deadline_seconds, v_type.deadline_seconds);
    IF v_deadline NOT BETWEEN 1 AND 604800 THEN
        PERFORM tasklane.refuse_invalid('deadline_seconds', 'must be between 1 and 604800');
    END IF;
    v_attempts := coalesce(run_task.max_attempts, v_type.max_attempts);
    IF v_attempts NOT BETWEEN 1 AND 25 THEN
        PERFORM tasklane.refuse_invalid('max_attempts', 'must be between 1 and 25');
    END IF;
    v_restart := coalesce(run_task.on_restart, v_type.on_restart);
    IF v_restart NOT IN ('fail', 'retry', 'resume') THEN
        PERFORM tasklane.refuse_invalid('on_restart', 'must be fail, retry or resume');
    END IF;
    v_privacy := coalesce(run_task.privacy, v_type.privacy);
    IF v_privacy NOT IN ('local_only', 'external_allowed') THEN
        PERFORM tasklane.refuse_invalid('privacy', 'must be local_only or external_allowed');
    END IF;

    -- A UUIDv7 like the HTTP door's: 48 bits of Unix milliseconds, then random bits.
    v_id := encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
                PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint)
                                  FROM 3)
                FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid;
    v_digest := tasklane.request_digest(run_task.task_type, run_task.source_id, run_task.input,
                                        v_priority, v_deadline, v_attempts, v_restart,
                                        v_privacy);
    SELECT s.outcome AS answer, s.refused, s.free_at, s.decided_at, (s.task).id AS id,
           (s.task).state AS state
    INTO v_answer
    FROM tasklane.submit_task(v_id, run_task.app, run_task.scope_id, run_task.effect_key,
                              run_task.usage_subject, run_task.source_id, run_task.task_type,
                              v_digest, run_task.input, v_priority::smallint, v_attempts,
                              v_restart, v_privacy, v_type.lease_seconds,
                              v_type.attempt_timeout_seconds, v_deadline, v_type.resource,
                              NULL::text) s;
    IF NOT FOUND OR v_answer.answer IS NULL THEN
        RAISE EXCEPTION 'a concurrent change to this identity interfered; run it again'
            USING ERRCODE = 'TL409', DETAIL = 'concurrent_change';
    END IF;
    CASE v_answer.answer
        WHEN 'created' THEN
            -- Delivered at commit, never for a rollback: workers wake for a task that exists.
            PERFORM pg_notify('tasklane_wakeup', '');
            RETURN QUERY SELECT v_answer.id, 'created'::text;
        WHEN 'found' THEN
            RETURN QUERY SELECT v_answer.id,
                CASE WHEN v_answer.state IN ('succeeded', 'failed', 'cancelled')
                     THEN 'replayed' ELSE 'joined' END;
        WHEN 'conflict' THEN
            RAISE EXCEPTION 'the effect key is already used by a different request'
                USING ERRCODE = 'TL409', DETAIL = 'idempotency_conflict';
        WHEN 'scope_deleted' THEN
            RAISE EXCEPTION 'the scope was deleted and is fenced'
                USING ERRCODE = 'TL410', DETAIL = 'scope_deleted';
        ELSE
            -- 'refused': the honest wait of src/admission/refusal.rs.
            v_retry := CASE v_answer.refused
                WHEN 'emergency_stop' THEN 60
                WHEN 'capacity_exhausted' THEN 2
                WHEN 'rate_limited' THEN coalesce(greatest(1, ceil(extract(epoch FROM
                        v_answer.free_at - v_answer.decided_at)))::bigint, 2)
                ELSE greatest(1, ceil(extract(epoch FROM
                        (date_trunc('day', v_answer.decided_at AT TIME ZONE 'UTC')
                         + interval '1 day') AT TIME ZONE 'UTC' - v_answer.decided_at)))::bigint
            END;
            RAISE EXCEPTION 'refused by admission: %', v_answer.refused
                USING ERRCODE = CASE v_answer.refused WHEN 'emergency_stop' THEN 'TL503'
                                                      ELSE 'TL429' END,
                      DETAIL = v_answer.refused,
                      HINT = format('retry after %s seconds', v_retry);
    END CASE;
END
$fn$;

REVOKE ALL ON FUNCTION tasklane.run_task(text, text, text, text, jsonb, text, text, integer,
                                         bigint, integer, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION tasklane.refuse_invalid(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION tasklane.check_key(text, text, boolean) FROM PUBLIC;

-- The application role: the SQL API and nothing else. Roles are cluster-wide, so an
-- existing tasklane_app is reused; a migrating role without CREATEROLE leaves creating
-- it (and these grants) to the operator (docs/sql-api.md).
DO $do$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'tasklane_app') THEN
        BEGIN
            CREATE ROLE tasklane_app NOLOGIN;
        EXCEPTION
            WHEN insufficient_privilege THEN
                RAISE NOTICE 'tasklane_app not created (no CREATEROLE): see docs/sql-api.md';
                RETURN;
            WHEN duplicate_object OR unique_violation THEN
                NULL; -- created concurrently by another database's migration
        END;
    END IF;
    GRANT USAGE ON SCHEMA tasklane TO tasklane_app;
    GRANT EXECUTE ON FUNCTION
        tasklane.run_task(text, text, text, text, jsonb, text, text, integer, bigint,
                          integer, text, text),
        tasklane.release_task(text, text, text, text),
        tasklane.release_task_at(text, text, text, text),
        tasklane.delete_tasks(text, text, text, boolean),
        tasklane.lift_fence(text, text),
        tasklane.list_unreleased_sources(text, text, text, integer)
    TO tasklane_app;
END
$do$;
