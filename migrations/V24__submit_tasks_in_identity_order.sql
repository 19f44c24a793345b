-- V24: a cheaper batch submit and request digest (issue 15, "Batch submit": 30,000
-- tasks/s; issue 16, "Submit at 5,000/s"). Forward-only: never edit once landed.
--
-- Instructions per item of a 1,000-item batch of new tasks, counted by callgrind in one
-- backend (repeatable to a few hundred; the same batch, old and new functions):
-- 391,000 with V16/V20 against 289,000 here (both counts include the harness building
-- the arrays). Where it went:
--
-- 1. tasklane.request_digest builds the text it hashes by concatenation instead of
--    jsonb_build_object(...)::text: the same bytes (jsonb prints an object's keys by
--    length, then bytewise, as written below; every string through to_json, which
--    escapes as jsonb does; integers as they print; a missing value as null), for about
--    half the instructions (67,000 an item against 36,000). Same signature, so every
--    caller (submit_task, submit_batch.sql, tasklane.run_task) gets it.
-- 2. A new tasklane.submit_tasks, with the item numbers as a first argument:
--    - the caller sends the items in identity order (app, scope, effect key, subject;
--      equal identities in item order) and says each one's position in the request in
--      p_n (a permutation of 1..N). V16 sorted them itself, twice, in a window that
--      numbered each identity's items and again for the insert: 30,000 instructions an
--      item.
--    - every item goes to the one insert; ON CONFLICT DO NOTHING skips a later item of
--      an identity the same statement inserted (the first in array order wins, which is
--      the first in the request) as it skips one that exists.
--    - the owner locks are computed per distinct (app, scope), not per item.
--    - the stop, limit and fence probes run per item only when a stop, a limit or a
--      fence exists for one of the batch's apps (one look each first): OR'd with that
--      look, they stay subplans and never become joins, so nothing between the arrays
--      and the insert can reorder the rows. The look is a statement of its own, after
--      the owner locks: a fence cannot be committed after it (a scope deletion holds
--      the owner lock exclusively), and a stop or limit committed between it and the
--      insert is one that came after the batch, as it would be a moment after V16's
--      statement took its snapshot.
--    - the views come back as columns, straight from the insert's RETURNING, not as a
--      composite built, gathered into an array and taken apart again.
--    - the `task.queued` event's data is a constant.
--    Answers are unchanged: created, or through tasklane.submit_task in item order for
--    the items not created (found, conflict, scope_deleted, refused, or created by
--    admission).
--
-- V16's 18-argument submit_tasks stays, unchanged, for replicas of the previous
-- version during a rolling upgrade (a later migration drops it).

CREATE OR REPLACE FUNCTION tasklane.request_digest(
    p_task_type text, p_source_id text, p_input jsonb, p_priority integer,
    p_deadline_seconds bigint, p_max_attempts integer, p_on_restart text, p_privacy text)
RETURNS bytea
LANGUAGE sql STABLE
AS $$
    SELECT '\x02'::bytea || sha256(convert_to(
        '{"input": ' || coalesce(CASE WHEN p_input::text ~ '\.[0-9]*0(?![0-9])'
                                      THEN tasklane.canonical_json(p_input)::text
                                      ELSE p_input::text END, 'null')
        || ', "privacy": ' || coalesce(to_json(p_privacy)::text, 'null')
        || ', "priority": ' || coalesce(p_priority::text, 'null')
        || ', "source_id": ' || coalesce(to_json(p_source_id)::text, 'null')
        || ', "task_type": ' || coalesce(to_json(p_task_type)::text, 'null')
        || ', "on_restart": ' || coalesce(to_json(p_on_restart)::text, 'null')
        || ', "max_attempts": ' || coalesce(p_max_attempts::text, 'null')
        || ', "deadline_seconds": ' || coalesce(p_deadline_seconds::text, 'null')
        || '}', 'UTF8'))
$$;

-- The parameters after p_n are V16's, one array per column in the caller's identity
-- order. Returns one row per item: its position `n`, submit_task's outcome and refusal
-- columns, and the task's view columns (tasklane.task_views' names and order); no
-- particular row order. Locks: the owner locks (shared), the new rows, and for the
-- items not created those of submit_task; all held until the transaction ends.
CREATE FUNCTION tasklane.submit_tasks(
    p_n bigint[], p_id uuid[], p_app text[], p_scope text[], p_effect_key text[],
    p_subject text[], p_source text[], p_task_type text[], p_digest bytea[],
    p_input jsonb[], p_priority smallint[], p_max_attempts integer[], p_on_restart text[],
    p_privacy text[], p_lease_seconds integer[], p_attempt_timeout_seconds integer[],
    p_deadline_seconds bigint[], p_resource text[], p_traceparent text[])
RETURNS TABLE (n bigint, outcome text, refused text, refused_limit bigint,
               free_at timestamptz, decided_at timestamptz,
               id uuid, app text, scope_id text, source_id text, usage_subject text,
               task_type text, state text, priority smallint, attempt integer,
               max_attempts integer, progress smallint, phase text,
               created_at timestamptz, started_at timestamptz, finished_at timestamptz,
               released_at timestamptz, deadline_at timestamptz, result jsonb,
               error_code text, error_message text, usage_units bigint, provider text,
               model text, route text)
LANGUAGE plpgsql AS $$
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
