-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.identity_task, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The task with the identity (p_app, p_scope, p_effect_key, p_subject; a NULL subject
-- matches only NULL), as tasklane.submit_task answers with it: outcome found with its
-- view row when p_digest matches its request digest, conflict without it otherwise; no
-- row when no task has the identity. Digests match on their canonical part when both
-- have one, else on their legacy part (tasklane.digest_canonical, digest_legacy), so
-- tasks stored by any binary keep matching. Called by tasklane.submit_task; takes no
-- lock.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function identity_task: migrations/V5__hot_paths.sql, migrations/V12__sql_run_task.sql, migrations/V33__function_comments.sql
CREATE FUNCTION tasklane.identity_task(p_app text, p_scope text, p_effect_key text, p_subject text, p_digest bytea) RETURNS TABLE(outcome text, refused text, refused_limit bigint, free_at timestamp with time zone, decided_at timestamp with time zone, task tasklane.task_views)
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
