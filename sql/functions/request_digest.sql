-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.request_digest, add a migration that replaces it, then run
-- `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The current definition of tasklane.request_digest (pg_dump --schema-only, normalised).
-- The line above it names the migrations that wrote it; their comments say why.

-- function request_digest: migrations/V12__sql_run_task.sql, migrations/V20__request_digest_inlined.sql
CREATE FUNCTION tasklane.request_digest(p_task_type text, p_source_id text, p_input jsonb, p_priority integer, p_deadline_seconds bigint, p_max_attempts integer, p_on_restart text, p_privacy text) RETURNS bytea
    LANGUAGE sql STABLE
    AS $$
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
$$;
