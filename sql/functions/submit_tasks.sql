-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.submit_tasks, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Submits many tasks in one statement (sql/submit_batch.sql, POST /v1/tasks:batch): takes
-- the owner lock (shared) of every (app, scope) in key order, inserts in one multi-row
-- insert the new tasks to which no fence, emergency stop or limit applies, then sends
-- every other item through tasklane.submit_task in item order, so each item is answered
-- as a single submit of it would be and items are independent; an identity twice in one
-- batch joins its first item's task.
-- Every array has one element per item, sorted by the caller in identity order (app,
-- scope, effect key, subject; equal identities in item order), so the function sorts
-- nothing and of equal identities the first in the request wins the insert. p_n gives
-- each item's position in the request (a permutation of 1..N, refused otherwise); the
-- other arrays are tasklane.submit_task's parameters, one element per item.
-- Returns one row per item: its position n, the outcome columns of tasklane.submit_task
-- and the task's view columns, in no particular order; a NULL outcome when the item's
-- identity's task vanished while being read.
-- Locks: the owner locks (shared), the new rows, and those of tasklane.submit_task for
-- the items it runs; all until the transaction ends.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function submit_tasks: migrations/V16__submit_tasks.sql, migrations/V24__submit_tasks_in_identity_order.sql, migrations/V33__function_comments.sql, migrations/V34__drop_compatibility_shims.sql
CREATE FUNCTION tasklane.submit_tasks(p_n bigint[], p_id uuid[], p_app text[], p_scope text[], p_effect_key text[], p_subject text[], p_source text[], p_task_type text[], p_digest bytea[], p_input jsonb[], p_priority smallint[], p_max_attempts integer[], p_on_restart text[], p_privacy text[], p_lease_seconds integer[], p_attempt_timeout_seconds integer[], p_deadline_seconds bigint[], p_resource text[], p_traceparent text[]) RETURNS TABLE(n bigint, outcome text, refused text, refused_limit bigint, free_at timestamp with time zone, decided_at timestamp with time zone, id uuid, app text, scope_id text, source_id text, usage_subject text, task_type text, state text, priority smallint, attempt integer, max_attempts integer, progress smallint, phase text, created_at timestamp with time zone, started_at timestamp with time zone, finished_at timestamp with time zone, released_at timestamp with time zone, deadline_at timestamp with time zone, result jsonb, error_code text, error_message text, usage_units bigint, provider text, model text, route text)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    v_apps text[];
    v_unlimited boolean;
    v_unfenced boolean;
    v_created bigint;
    v_done boolean[];
BEGIN
    -- v_done below is indexed by position: p_n must number the items 1..N.
    IF cardinality(p_n) IS DISTINCT FROM cardinality(p_id)
       OR (SELECT min(x) <> 1 OR max(x) <> cardinality(p_n) OR count(DISTINCT x) <> count(*)
           FROM unnest(p_n) AS x) THEN
        RAISE EXCEPTION 'p_n must number the % items 1..%, each once', cardinality(p_id),
            cardinality(p_id) USING ERRCODE = 'invalid_parameter_value';
    END IF;

    PERFORM pg_advisory_xact_lock_shared(k.key)
    FROM (SELECT tasklane.owner_key(d.app, d.scope) AS key
          FROM (SELECT DISTINCT a.app, a.scope
                FROM unnest(p_app, p_scope) AS a (app, scope)) d
          ORDER BY 1) k;

    -- After the owner locks, as submit_task reads them: a fence set by a scope deletion
    -- is committed before this batch's shared lock is granted, or waits for it.
    SELECT array_agg(DISTINCT a.app) INTO v_apps FROM unnest(p_app) AS a (app);
    SELECT NOT EXISTS (SELECT 1 FROM tasklane.emergency_stops e
                       WHERE e.app = ANY (v_apps || ''::text))
           AND NOT EXISTS (SELECT 1 FROM tasklane.limits k
                           WHERE k.app = ANY (v_apps || ''::text)),
           NOT EXISTS (SELECT 1 FROM tasklane.scope_fences f WHERE f.app = ANY (v_apps))
    INTO v_unlimited, v_unfenced;

    -- The view columns in tasklane.task_views' order (V1); a change to that view
    -- changes this.
    RETURN QUERY
    WITH item AS (
        SELECT b.*
        FROM unnest(p_id, p_app, p_scope, p_effect_key, p_subject, p_source, p_task_type,
                    p_digest, p_input, p_priority, p_max_attempts, p_on_restart,
                    p_privacy, p_lease_seconds, p_attempt_timeout_seconds,
                    p_deadline_seconds, p_resource, p_traceparent)
             AS b (id, app, scope, effect_key, subject, source, task_type, digest, input,
                   priority, max_attempts, on_restart, privacy, lease_seconds,
                   attempt_timeout_seconds, deadline_seconds, resource, traceparent)
    ), inserted AS (
        INSERT INTO tasklane.tasks AS t (
            id, app, scope_id, effect_key, usage_subject, source_id, task_type,
            request_digest, input, priority, max_attempts, on_restart, privacy,
            lease_seconds, attempt_timeout_seconds, deadline_at, event_seq, resource,
            traceparent)
        SELECT i.id, i.app, i.scope, i.effect_key, i.subject, i.source, i.task_type,
               i.digest, i.input, i.priority, i.max_attempts, i.on_restart, i.privacy,
               i.lease_seconds, i.attempt_timeout_seconds,
               now() + i.deadline_seconds * interval '1 second', 1, i.resource,
               i.traceparent
        FROM item i
        WHERE (v_unfenced
               OR NOT EXISTS (SELECT 1 FROM tasklane.scope_fences f
                              WHERE f.app = i.app AND f.scope_id = i.scope))
          AND (v_unlimited
               OR NOT EXISTS (SELECT 1 FROM tasklane.emergency_stops e
                              WHERE e.app IN ('', i.app))
                  AND NOT EXISTS (SELECT 1 FROM tasklane.limits k
                                  WHERE (k.app, k.usage_subject)
                                        IN (('', ''), (i.app, ''),
                                            (i.app, coalesce(i.subject, '')))))
        ON CONFLICT ON CONSTRAINT tasks_identity DO NOTHING
        RETURNING t.id, t.app, t.scope_id, t.source_id, t.usage_subject, t.task_type,
                  t.state, t.priority, t.attempt, t.max_attempts, t.progress, t.phase,
                  t.created_at, t.started_at, t.finished_at, t.released_at,
                  t.deadline_at, t.result, t.error_code, t.error_message,
                  t.usage_units, t.provider, t.model, t.route
    ), event AS (
        INSERT INTO tasklane.task_events (task_id, seq, type, data, at)
        SELECT c.id, 1, 'task.queued', '{"attempt": 0}'::jsonb, c.created_at
        FROM inserted c
    )
    SELECT o.n, 'created'::text, NULL::text, NULL::bigint, NULL::timestamptz,
           NULL::timestamptz, c.*
    FROM inserted c
    JOIN unnest(p_id, p_n) AS o (id, n) ON o.id = c.id;
    GET DIAGNOSTICS v_created = ROW_COUNT;
    IF v_created = cardinality(p_id) THEN
        RETURN;
    END IF;

    -- v_done[n]: item n was created above (its id, fresh from the caller, is a task's
    -- now). The rest in item order (admission decides in that order), one submit_task
    -- call each.
    SELECT array_agg(t.id IS NOT NULL ORDER BY u.n) INTO v_done
    FROM unnest(p_id, p_n) AS u (id, n)
    LEFT JOIN tasklane.tasks t ON t.id = u.id;
    RETURN QUERY
    SELECT b.n, s.outcome, s.refused, s.refused_limit, s.free_at, s.decided_at,
           (s.task).*
    FROM (SELECT u.*
          FROM unnest(p_n, p_id, p_app, p_scope, p_effect_key, p_subject, p_source,
                      p_task_type, p_digest, p_input, p_priority, p_max_attempts,
                      p_on_restart, p_privacy, p_lease_seconds, p_attempt_timeout_seconds,
                      p_deadline_seconds, p_resource, p_traceparent)
               AS u (n, id, app, scope, effect_key, subject, source, task_type, digest,
                     input, priority, max_attempts, on_restart, privacy, lease_seconds,
                     attempt_timeout_seconds, deadline_seconds, resource, traceparent)
          WHERE NOT v_done[u.n]
          ORDER BY u.n) b
    LEFT JOIN LATERAL tasklane.submit_task(b.id, b.app, b.scope, b.effect_key,
                                           b.subject, b.source, b.task_type, b.digest,
                                           b.input, b.priority, b.max_attempts,
                                           b.on_restart, b.privacy, b.lease_seconds,
                                           b.attempt_timeout_seconds, b.deadline_seconds,
                                           b.resource, b.traceparent) s ON true;
END
$$;
