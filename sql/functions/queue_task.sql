-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.queue_task, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- SQL API: submits a task from inside an application's own transaction, so the task
-- exists exactly when that transaction commits. Validates the request as the HTTP door
-- does (keys 1 to 200 bytes, a registered task type, input size and numbers, priority,
-- deadline, attempts, on_restart, privacy), fills unset fields from the task type's
-- registration (sql/task_types_register.sql), computes the request digest and calls
-- tasklane.submit_task. Returns (task_id, outcome): created, joined (the identity's task
-- runs) or replayed (it finished). Raises SQLSTATE TL422 (invalid), TL409 (idempotency
-- conflict, concurrent change), TL410 (the scope is fenced), TL429 and TL503 (refused by
-- admission, the wait in the hint). A created task wakes workers at commit (NOTIFY
-- tasklane_wakeup). Parameters named p_app, p_task_type, ... like every function of the
-- SQL API.
-- Locks: those of tasklane.submit_task, held until the application's transaction ends.
-- SECURITY DEFINER, granted to tasklane_app.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function queue_task: migrations/V41__queue_task_p_names.sql
CREATE FUNCTION tasklane.queue_task(p_app text, p_task_type text, p_scope_id text, p_effect_key text, p_input jsonb, p_source_id text DEFAULT NULL::text, p_usage_subject text DEFAULT NULL::text, p_priority integer DEFAULT NULL::integer, p_deadline_seconds bigint DEFAULT NULL::bigint, p_max_attempts integer DEFAULT NULL::integer, p_on_restart text DEFAULT NULL::text, p_privacy text DEFAULT NULL::text) RETURNS TABLE(task_id uuid, outcome text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
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
$_$;

REVOKE ALL ON FUNCTION tasklane.queue_task(p_app text, p_task_type text, p_scope_id text, p_effect_key text, p_input jsonb, p_source_id text, p_usage_subject text, p_priority integer, p_deadline_seconds bigint, p_max_attempts integer, p_on_restart text, p_privacy text) FROM PUBLIC;
GRANT ALL ON FUNCTION tasklane.queue_task(p_app text, p_task_type text, p_scope_id text, p_effect_key text, p_input jsonb, p_source_id text, p_usage_subject text, p_priority integer, p_deadline_seconds bigint, p_max_attempts integer, p_on_restart text, p_privacy text) TO tasklane_app;
