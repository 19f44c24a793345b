-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.request_digest, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The canonical request digest of a submit: byte 2 (the format) followed by the SHA-256
-- of the request's fields as a JSON object with its keys in a fixed order, the input
-- canonicalised (tasklane.canonical_json) only when it holds a number with a trailing
-- zero in its fraction, the one case where jsonb's text is not already canonical. Two
-- submits of one identity are the same request exactly when their digests are equal.
-- Computed in SQL so every door agrees: sql/submit.sql, sql/submit_batch.sql and
-- tasklane.run_task. Parameters: the task type, source id, input, priority, deadline
-- seconds, max attempts, on_restart and privacy of the request, as resolved.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function request_digest: migrations/V12__sql_run_task.sql, migrations/V20__request_digest_inlined.sql, migrations/V24__submit_tasks_in_identity_order.sql, migrations/V33__function_comments.sql
CREATE FUNCTION tasklane.request_digest(p_task_type text, p_source_id text, p_input jsonb, p_priority integer, p_deadline_seconds bigint, p_max_attempts integer, p_on_restart text, p_privacy text) RETURNS bytea
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
