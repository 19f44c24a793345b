-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.identity_key, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The two-int4 advisory-lock key of a task identity (app, scope, effect key, subject):
-- the first 8 bytes of a SHA-256 of the parts joined by control characters, so distinct
-- identities collide only by chance. tasklane.submit_task try-locks it so two submits of
-- one identity never both insert. Takes no lock itself.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function identity_key: migrations/V3__admission.sql, migrations/V5__hot_paths.sql, migrations/V33__function_comments.sql
CREATE FUNCTION tasklane.identity_key(p_app text, p_scope text, p_effect_key text, p_subject text) RETURNS integer[]
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT ARRAY[('x' || encode(substr(sha256(convert_to(concat_ws(chr(31), p_app, p_scope,
                     p_effect_key, coalesce(chr(30) || p_subject, '')), 'UTF8')), 1, 4), 'hex'))::bit(32)::integer,
                 ('x' || encode(substr(sha256(convert_to(concat_ws(chr(31), p_app, p_scope,
                     p_effect_key, coalesce(chr(30) || p_subject, '')), 'UTF8')), 5, 4), 'hex'))::bit(32)::integer]
$$;
