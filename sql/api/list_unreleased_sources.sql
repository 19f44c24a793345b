-- tasklane.list_unreleased_sources: distinct (scope_id, source_id) pairs of an app that
-- still have unreleased tasks, for reconciling owners that no longer exist (DESIGN §5).
-- Ordered by scope_id, then source_id with NULL (tasks without a source) first, in
-- byte order (COLLATE "C"). A missing source sorts as '' and the cursor starts at
-- ('', ''): scope and source ids are never empty (submit bounds them to 1..200 bytes),
-- so '' stands for "before everything" without ambiguity, and the keyset is one row
-- comparison that the tasks_unreleased index answers as its scan start.
-- Keyset paging: pass the last pair of the previous page as (after_scope_id,
-- after_source_id); after_scope_id NULL starts at the beginning. after_source_id NULL
-- with a scope means "after the pair (scope, no source)".
-- Parameters: app, after_scope_id, after_source_id, limit (clamped to 1..100).
-- Locks: none.
CREATE FUNCTION tasklane.list_unreleased_sources(
    p_app text, p_after_scope_id text DEFAULT NULL, p_after_source_id text DEFAULT NULL,
    p_limit integer DEFAULT 100)
RETURNS TABLE (scope_id text, source_id text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
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
$fn$;
