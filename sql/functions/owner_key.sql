-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.owner_key, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The bigint advisory-lock key of a scope (app, scope): the first 8 bytes of a SHA-256
-- of app and scope. Submits (tasklane.submit_task, submit_tasks) take it shared; a scope
-- deletion (tasklane.delete_tasks) takes it exclusive, so a deletion and its fence never
-- interleave with a submit into the scope. sql/owner_lock_scope.sql takes it shared for a
-- retry's transaction. Takes no lock itself.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function owner_key: migrations/V1__core.sql, migrations/V5__hot_paths.sql, migrations/V33__function_comments.sql
CREATE FUNCTION tasklane.owner_key(p_app text, p_scope text) RETURNS bigint
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    AS $$
    SELECT ('x' || substr(encode(sha256(convert_to(p_app || chr(31) || p_scope, 'UTF8')), 'hex'), 1, 16))::bit(64)::bigint
$$;
