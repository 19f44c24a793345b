-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.owner_key, add a migration that replaces it, then run
-- `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The current definition of tasklane.owner_key (pg_dump --schema-only, normalised).
-- The line above it names the migrations that wrote it; their comments say why.

-- function owner_key: migrations/V1__core.sql, migrations/V5__hot_paths.sql
CREATE FUNCTION tasklane.owner_key(p_app text, p_scope text) RETURNS bigint
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    AS $$
    SELECT ('x' || substr(encode(sha256(convert_to(p_app || chr(31) || p_scope, 'UTF8')), 'hex'), 1, 16))::bit(64)::bigint
$$;
