-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.canonical_json, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The canonical form of a JSON value: numbers without trailing zeros in their fraction
-- (1.50 becomes 1.5), arrays and objects canonicalised element by element. Used by
-- tasklane.request_digest for inputs whose text is not canonical as it is. Immutable,
-- strict; takes no lock.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function canonical_json: migrations/V12__sql_run_task.sql, migrations/V33__function_comments.sql
CREATE FUNCTION tasklane.canonical_json(p_value jsonb) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE STRICT
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    CASE jsonb_typeof(p_value)
        WHEN 'number' THEN
            RETURN to_jsonb(trim_scale(p_value::numeric));
        WHEN 'array' THEN
            RETURN (SELECT coalesce(jsonb_agg(tasklane.canonical_json(e.value) ORDER BY e.n),
                                    '[]'::jsonb)
                    FROM jsonb_array_elements(p_value) WITH ORDINALITY AS e (value, n));
        WHEN 'object' THEN
            RETURN (SELECT coalesce(jsonb_object_agg(o.key, tasklane.canonical_json(o.value)),
                                    '{}'::jsonb)
                    FROM jsonb_each(p_value) AS o);
        ELSE
            RETURN p_value;
    END CASE;
END
$$;
