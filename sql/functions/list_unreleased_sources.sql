-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.list_unreleased_sources, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- SQL API and sql/lifecycle_unreleased.sql: the (scope_id, source_id) pairs of app p_app
-- that still have unreleased tasks, in byte order (COLLATE "C"), a page of at most
-- p_limit (1 to 100, default 100) after the pair (p_after_scope_id, p_after_source_id)
-- (keyset pagination; NULLs: from the start). A NULL source_id stands for tasks without
-- one. Takes no lock. SECURITY DEFINER, granted to tasklane_app.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function list_unreleased_sources: migrations/V4__lifecycle.rs, sql/api/list_unreleased_sources.sql, migrations/V33__function_comments.sql
CREATE FUNCTION tasklane.list_unreleased_sources(p_app text, p_after_scope_id text DEFAULT NULL::text, p_after_source_id text DEFAULT NULL::text, p_limit integer DEFAULT 100) RETURNS TABLE(scope_id text, source_id text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT pairs.scope_id, nullif(pairs.source_key, '')
    FROM (
        SELECT DISTINCT t.scope_id COLLATE "C" AS scope_id,
                        coalesce(t.source_id, '') COLLATE "C" AS source_key
        FROM tasklane.tasks t
        WHERE t.app = p_app AND t.released_at IS NULL
          AND (t.scope_id COLLATE "C", coalesce(t.source_id, '') COLLATE "C")
              > (coalesce(p_after_scope_id, ''), coalesce(p_after_source_id, ''))
        ORDER BY 1, 2
        LIMIT greatest(1, least(coalesce(p_limit, 100), 100))
    ) pairs
    ORDER BY pairs.scope_id, pairs.source_key
$$;

REVOKE ALL ON FUNCTION tasklane.list_unreleased_sources(p_app text, p_after_scope_id text, p_after_source_id text, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION tasklane.list_unreleased_sources(p_app text, p_after_scope_id text, p_after_source_id text, p_limit integer) TO tasklane_app;
