-- V20: tasklane.request_digest becomes inlinable. Forward-only: never edit once landed.
--
-- With its own `SET search_path` (V12) PostgreSQL could not inline the function: every
-- submit planned its SQL body anew (29,920 plans for 30,000 submits in the HTTP bench,
-- 0.031 ms each), and a batch did so once per item. Without the clause, and declared
-- STABLE (it calls jsonb_build_object and convert_to, which are stable: an IMMUTABLE
-- function whose body is less so is never inlined), its expression is planned into the
-- calling statement once. Same digest, byte for byte: the body is unchanged, every
-- function and operator in it is pg_catalog's (searched first unless a search_path
-- names pg_catalog explicitly after another schema; tasklane's connections do not),
-- and canonical_json is named with its schema. The SQL door (tasklane.run_task) pins
-- its own search_path, which an inlined body runs under.
CREATE OR REPLACE FUNCTION tasklane.request_digest(
    p_task_type text, p_source_id text, p_input jsonb, p_priority integer,
    p_deadline_seconds bigint, p_max_attempts integer, p_on_restart text, p_privacy text)
RETURNS bytea
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
