-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.identity_key, add a migration that replaces it, then run
-- `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The current definition of tasklane.identity_key (pg_dump --schema-only, normalised).
-- The line above it names the migrations that wrote it; their comments say why.

-- function identity_key: migrations/V3__admission.sql, migrations/V5__hot_paths.sql
CREATE FUNCTION tasklane.identity_key(p_app text, p_scope text, p_effect_key text, p_subject text) RETURNS integer[]
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT ARRAY[('x' || encode(substr(sha256(convert_to(concat_ws(chr(31), p_app, p_scope,
                     p_effect_key, coalesce(chr(30) || p_subject, '')), 'UTF8')), 1, 4), 'hex'))::bit(32)::integer,
                 ('x' || encode(substr(sha256(convert_to(concat_ws(chr(31), p_app, p_scope,
                     p_effect_key, coalesce(chr(30) || p_subject, '')), 'UTF8')), 5, 4), 'hex'))::bit(32)::integer]
$$;
