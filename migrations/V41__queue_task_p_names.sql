-- The SQL API's submit under one parameter naming: tasklane.queue_task takes the p_
-- names every other function of the SQL API takes (p_app, p_scope_id, ...), and
-- tasklane.run_task, whose parameters have no prefix, stays for callers of the previous
-- release. Forward-only: never edit once landed.
--
-- Why a new name: PostgreSQL tells functions apart by name and argument types, never by
-- parameter names. CREATE OR REPLACE cannot rename a parameter, and a function beside
-- run_task with the same types but p_ names would be the same function. Renaming
-- run_task's parameters (DROP and CREATE) would break every call with named arguments
-- (run_task(app => ...)), the way the SQL API documents and the client libraries of the
-- previous release call it; the compatibility policy keeps what the previous release
-- calls working for a release. So the p_ names get a new function, and run_task keeps
-- its names, forwarding to it: called by name (app => ...) or by position, it answers
-- as before. A later release drops run_task, in a migration of its own, once no
-- supported client calls it.
--
-- queue_task is run_task's body with p_ parameters: the same validation, digest,
-- admission, refusals (SQLSTATE TL422, TL409, TL410, TL429, TL503) and wake-up at commit.

CREATE FUNCTION tasklane.queue_task(
    p_app text, p_task_type text, p_scope_id text, p_effect_key text, p_input jsonb,
    p_source_id text DEFAULT NULL, p_usage_subject text DEFAULT NULL,
    p_priority integer DEFAULT NULL, p_deadline_seconds bigint DEFAULT NULL,
    p_max_attempts integer DEFAULT NULL, p_on_restart text DEFAULT NULL,
    p_privacy text DEFAULT NULL)
RETURNS TABLE(task_id uuid, outcome text)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_type tasklane.registered_task_types;
    v_priority integer := coalesce(p_priority, 0);
    v_deadline bigint;
    v_attempts integer;
    v_restart text;
    v_privacy text;
    v_id uuid;
    v_digest bytea;
    v_answer record;
    v_retry bigint;
BEGIN
    PERFORM tasklane.check_key('app', p_app, true);
    PERFORM tasklane.check_key('task_type', p_task_type, true);
    PERFORM tasklane.check_key('scope_id', p_scope_id, true);
    PERFORM tasklane.check_key('effect_key', p_effect_key, true);
    PERFORM tasklane.check_key('source_id', p_source_id, false);
    PERFORM tasklane.check_key('usage_subject', p_usage_subject, false);
    SELECT * INTO v_type FROM tasklane.registered_task_types r WHERE r.name = p_task_type;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown task type %', p_task_type
            USING ERRCODE = 'TL422', DETAIL = 'unknown_task_type', COLUMN = 'task_type';
    END IF;
    IF p_input IS NULL THEN
        PERFORM tasklane.refuse_invalid('input', 'is required');
    END IF;
    IF octet_length(p_input::text) > v_type.input_bytes THEN
        PERFORM tasklane.refuse_invalid('input', format('must be at most %s bytes', v_type.input_bytes));
    END IF;
    IF jsonb_path_exists(p_input,
                         'strict $.** ? (@.type() == "number" && (@ > 1e300 || @ < -1e300))') THEN
        PERFORM tasklane.refuse_invalid('input', 'numbers must be within ±1e300');
    END IF;
    IF v_priority NOT BETWEEN -100 AND 100 THEN
        PERFORM tasklane.refuse_invalid('priority', 'must be between -100 and 100');
    END IF;
    v_deadline := coalesce(p_deadline_seconds, v_type.deadline_seconds);
    IF v_deadline NOT BETWEEN 1 AND 604800 THEN
        PERFORM tasklane.refuse_invalid('deadline_seconds', 'must be between 1 and 604800');
    END IF;
    v_attempts := coalesce(p_max_attempts, v_type.max_attempts);
    IF v_attempts NOT BETWEEN 1 AND 25 THEN
        PERFORM tasklane.refuse_invalid('max_attempts', 'must be between 1 and 25');
    END IF;
    v_restart := coalesce(p_on_restart, v_type.on_restart);
    IF v_restart NOT IN ('fail', 'retry', 'resume') THEN
        PERFORM tasklane.refuse_invalid('on_restart', 'must be fail, retry or resume');
    END IF;
    v_privacy := coalesce(p_privacy, v_type.privacy);
    IF v_privacy NOT IN ('local_only', 'external_allowed') THEN
        PERFORM tasklane.refuse_invalid('privacy', 'must be local_only or external_allowed');
    END IF;

    -- A UUIDv7 like the HTTP door's: 48 bits of Unix milliseconds, then random bits.
    v_id := encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
                PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint)
                                  FROM 3)
                FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid;
    v_digest := tasklane.request_digest(p_task_type, p_source_id, p_input,
                                        v_priority, v_deadline, v_attempts, v_restart,
                                        v_privacy);
    SELECT s.outcome AS answer, s.refused, s.free_at, s.decided_at, (s.task).id AS id,
           (s.task).state AS state
    INTO v_answer
    FROM tasklane.submit_task(v_id, p_app, p_scope_id, p_effect_key,
                              p_usage_subject, p_source_id, p_task_type,
                              v_digest, p_input, v_priority::smallint, v_attempts,
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

REVOKE ALL ON FUNCTION tasklane.queue_task(text, text, text, text, jsonb, text, text, integer, bigint, integer, text, text) FROM PUBLIC;

-- run_task forwards: its own parameter names, defaults and answer, queue_task's rules.
CREATE OR REPLACE FUNCTION tasklane.run_task(
    app text, task_type text, scope_id text, effect_key text, input jsonb,
    source_id text DEFAULT NULL, usage_subject text DEFAULT NULL,
    priority integer DEFAULT NULL, deadline_seconds bigint DEFAULT NULL,
    max_attempts integer DEFAULT NULL, on_restart text DEFAULT NULL,
    privacy text DEFAULT NULL)
RETURNS TABLE(task_id uuid, outcome text)
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
    SELECT q.task_id, q.outcome
    FROM tasklane.queue_task(run_task.app, run_task.task_type, run_task.scope_id,
                             run_task.effect_key, run_task.input, run_task.source_id,
                             run_task.usage_subject, run_task.priority,
                             run_task.deadline_seconds, run_task.max_attempts,
                             run_task.on_restart, run_task.privacy) q
$fn$;

-- The role tasklane_app (V12) may call queue_task as it may call run_task; where the
-- migrating role could not create it, the operator grants it (docs/sql-api.md).
DO $do$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'tasklane_app') THEN
        GRANT EXECUTE ON FUNCTION tasklane.queue_task(text, text, text, text, jsonb, text, text, integer, bigint, integer, text, text) TO tasklane_app;
    END IF;
END
$do$;

COMMENT ON FUNCTION tasklane.queue_task(text, text, text, text, jsonb, text, text, integer, bigint, integer, text, text) IS
$$SQL API: submits a task from inside an application's own transaction, so the task
exists exactly when that transaction commits. Validates the request as the HTTP door
does (keys 1 to 200 bytes, a registered task type, input size and numbers, priority,
deadline, attempts, on_restart, privacy), fills unset fields from the task type's
registration (sql/task_types_register.sql), computes the request digest and calls
tasklane.submit_task. Returns (task_id, outcome): created, joined (the identity's task
runs) or replayed (it finished). Raises SQLSTATE TL422 (invalid), TL409 (idempotency
conflict, concurrent change), TL410 (the scope is fenced), TL429 and TL503 (refused by
admission, the wait in the hint). A created task wakes workers at commit (NOTIFY
tasklane_wakeup). Parameters named p_app, p_task_type, ... like every function of the
SQL API.
Locks: those of tasklane.submit_task, held until the application's transaction ends.
SECURITY DEFINER, granted to tasklane_app.$$;

COMMENT ON FUNCTION tasklane.run_task(text, text, text, text, jsonb, text, text, integer, bigint, integer, text, text) IS
$$SQL API, kept for callers of the previous release: tasklane.queue_task with the
parameter names without prefix (app, task_type, scope_id, effect_key, input, source_id,
usage_subject, priority, deadline_seconds, max_attempts, on_restart, privacy), by name
or by position; same answer, refusals and wake-up. Dropped by a later release, in a
migration of its own, once no supported client calls it.
Locks: those of tasklane.queue_task, held until the application's transaction ends.
SECURITY DEFINER, granted to tasklane_app.$$;
