-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.submit_task, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Submits one task, or answers with the task that already has its identity (app, scope,
-- effect key, usage subject). Called by sql/submit.sql (POST /v1/tasks, one round trip),
-- by tasklane.submit_tasks for the batch items it does not insert itself, and by
-- tasklane.run_task (the SQL API).
-- Steps, in this order: an index probe for the identity (most submits are new, so no view
-- row is read first); the owner lock of (app, scope), shared, then a try-lock of the
-- identity's advisory lock (on contention it waits for the other submit of the identity
-- and answers with that task if it committed); the scope fence; admission
-- (tasklane.admit) only when an emergency stop or a limit applies to (app, subject), its
-- check written inline so its plan is cached with this function; the insert with its
-- task.queued event.
-- p_digest is the request digest: the canonical one (tasklane.request_digest) followed by
-- the legacy one the binary computes, compared by tasklane.identity_task.
-- p_deadline_seconds: the task's deadline from now (NULL: none). p_resource: the resource
-- whose slot a claim takes. p_traceparent: the W3C trace context to carry (NULL: none).
-- Returns one row: outcome created, found (task is the existing one), conflict (the same
-- identity with another request), scope_deleted (fenced) or refused (refused,
-- refused_limit, free_at and decided_at say why and until when); no row when the
-- identity's task vanished while being read. A refusal looks for the identity's task
-- again first: another submit of it may have committed after the probe.
-- Locks: the owner lock (shared), the identity's advisory lock, what admission takes
-- (capacity slots, rate tokens), the new row; all until the transaction ends.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function submit_task: migrations/V5__hot_paths.sql, migrations/V6__submit_trims.sql, migrations/V7__task_traceparent.sql, migrations/V29__a_refused_repeat_looks_again.sql, migrations/V33__function_comments.sql, migrations/V34__drop_compatibility_shims.sql
CREATE FUNCTION tasklane.submit_task(p_id uuid, p_app text, p_scope text, p_effect_key text, p_subject text, p_source text, p_task_type text, p_digest bytea, p_input jsonb, p_priority smallint, p_max_attempts integer, p_on_restart text, p_privacy text, p_lease_seconds integer, p_attempt_timeout_seconds integer, p_deadline_seconds bigint, p_resource text, p_traceparent text) RETURNS TABLE(outcome text, refused text, refused_limit bigint, free_at timestamp with time zone, decided_at timestamp with time zone, task tasklane.task_views)
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_key integer[];
    v_identity_free boolean;
    v_admitted boolean := false;
    v_admit record;
    v_created tasklane.task_views;
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

    -- The owner lock, then the identity try-lock: the fenced subquery yields its row
    -- (taking the owner lock) before the outer projection runs.
    v_key := tasklane.identity_key(p_app, p_scope, p_effect_key, p_subject);
    SELECT pg_try_advisory_xact_lock(v_key[1], v_key[2]) INTO v_identity_free
    FROM (SELECT pg_advisory_xact_lock_shared(tasklane.owner_key(p_app, p_scope)) OFFSET 0) owner;
    IF NOT v_identity_free THEN
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

    -- Whether any emergency stop or limit applies to (app, subject): the rows that the
    -- loop of tasklane.admit walks (V3). Written out here, not as a function, so its plan
    -- is cached with this one: a SQL function with subqueries is never inlined.
    IF EXISTS (SELECT 1 FROM tasklane.emergency_stops e WHERE e.app IN ('', p_app))
       OR EXISTS (SELECT 1 FROM tasklane.limits k
                  WHERE (k.app, k.usage_subject) IN (('', ''), (p_app, ''),
                                                     (p_app, coalesce(p_subject, '')))) THEN
        SELECT * INTO v_admit FROM tasklane.admit(p_id, p_app, p_subject, NULL);
        IF v_admit.refused IS NOT NULL THEN
            -- The identity lock was free, but not necessarily because no other submit
            -- of this identity ran: one may have committed after the probe above. Its
            -- task (a fresh snapshot sees it) is the answer, not the refusal (V29).
            RETURN QUERY SELECT * FROM tasklane.identity_task(p_app, p_scope, p_effect_key,
                                                              p_subject, p_digest);
            IF FOUND THEN
                RETURN;
            END IF;
            RETURN QUERY SELECT 'refused'::text, v_admit.refused, v_admit.limit_id,
                                v_admit.free_at, v_admit.at, NULL::tasklane.task_views;
            RETURN;
        END IF;
        v_admitted := true;
    END IF;

    -- holds_capacity records whether admission took capacity slots for this id, so only
    -- such tasks fire the release triggers. The view row is built from the new row in
    -- the column order of tasklane.task_views (V1); a change to that view changes this.
    WITH inserted AS (
        INSERT INTO tasklane.tasks AS t (
            id, app, scope_id, effect_key, usage_subject, source_id, task_type,
            request_digest, input, priority, max_attempts, on_restart, privacy,
            lease_seconds, attempt_timeout_seconds, deadline_at, event_seq, resource,
            holds_capacity, traceparent)
        VALUES (p_id, p_app, p_scope, p_effect_key, p_subject, p_source, p_task_type,
                p_digest, p_input, p_priority, p_max_attempts, p_on_restart, p_privacy,
                p_lease_seconds, p_attempt_timeout_seconds,
                now() + p_deadline_seconds * interval '1 second', 1, p_resource,
                v_admitted AND EXISTS (SELECT 1 FROM tasklane.capacity_slots c
                                       WHERE c.task_id = p_id),
                p_traceparent)
        ON CONFLICT ON CONSTRAINT tasks_identity DO NOTHING
        RETURNING ROW(t.id, t.app, t.scope_id, t.source_id, t.usage_subject, t.task_type,
                      t.state, t.priority, t.attempt, t.max_attempts, t.progress, t.phase,
                      t.created_at, t.started_at, t.finished_at, t.released_at,
                      t.deadline_at, t.result, t.error_code, t.error_message,
                      t.usage_units, t.provider, t.model, t.route)::tasklane.task_views AS v
    ), event AS (
        INSERT INTO tasklane.task_events (task_id, seq, type, data, at)
        SELECT (i.v).id, 1, 'task.queued', jsonb_build_object('attempt', 0), (i.v).created_at
        FROM inserted i
    )
    SELECT (i.v).* INTO v_created FROM inserted i;

    IF v_created.id IS NULL THEN
        IF v_admitted THEN
            PERFORM tasklane.unadmit(p_id, p_app, p_subject);
        END IF;
        RETURN QUERY SELECT * FROM tasklane.identity_task(p_app, p_scope, p_effect_key,
                                                          p_subject, p_digest);
        RETURN;
    END IF;

    RETURN QUERY SELECT 'created'::text, NULL::text, NULL::bigint, NULL::timestamptz,
                        NULL::timestamptz, v_created;
END
$$;
