-- V50: the floor keeper's raise as a function that plans with sequential and bitmap
-- scans and sorts priced out, reading each floor's range of the claimable index on its
-- own and marking the passed rows by id alone.
-- Sent as a statement, it read 21,000-52,000 pages a raise during a 10-minute hold in
-- the soak (1,000 tasks/s), where the claimable rows it passes (a few hundred between
-- the floor and the point) take an index range scan of task_queue_claimable: the
-- mirror's statistics under a hold (few live rows, many pages) let the planner join
-- the floors to a scan whose cost grows with the dead rows. The raise was then the
-- largest reader of the mirror's heap (about 300 pages a task). In the held-snapshot
-- test, the raise read 17, 41 and 130 of the mirror's pages before the hold and after
-- 800 and 1,600 tasks under it, once analyzed: its range and its marking read
-- task_queue_turns, the type's entries and the ids as filters.
-- Forward-only: never edit once landed.

CREATE FUNCTION tasklane.raise_floors(p_task_type text[], p_priority smallint[],
                                      p_target double precision[])
RETURNS TABLE(raised bigint, marked bigint)
LANGUAGE plpgsql
SET enable_seqscan TO 'off'
SET enable_bitmapscan TO 'off'
SET enable_sort TO 'off'
SET jit TO 'off'
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH due AS MATERIALIZED (
        SELECT f.task_type, f.priority, f.floor, g.target
        FROM unnest(p_task_type, p_priority, p_target) AS g(task_type, priority, target)
        JOIN tasklane.turn_floors f ON f.task_type = g.task_type AND f.priority = g.priority
        WHERE g.target > f.floor
          -- The class 0x746c7472 is the raisers' alone.
          AND pg_try_advisory_xact_lock(1953264754, hashtext(g.task_type || '/' || g.priority))
    ), passed AS MATERIALIZED (
        -- Each floor's range of the claimable index on its own, in the index's order
        -- (sorts are priced out in this function): joined, the planner may hash a scan
        -- of the whole index against the floors, and unordered it may read
        -- task_queue_turns, the type's entries with the turn only a filter; either walks
        -- every dead entry of the type. The limit (never reached) keeps the subquery
        -- apart.
        SELECT q.id, q.task_type, q.priority, q.turn
        FROM due d
        CROSS JOIN LATERAL (
            SELECT q.id, q.task_type, q.priority, q.turn
            FROM tasklane.task_queue q
            WHERE q.task_type = d.task_type AND q.priority = d.priority
              AND q.state IN ('queued', 'waiting_for_retry') AND NOT q.behind
              AND q.turn >= d.floor AND q.turn < d.target
            ORDER BY q.priority DESC, q.turn, q.id
            LIMIT 1000000) q
    ), locked AS MATERIALIZED (
        SELECT t.id
        FROM tasklane.tasks t
        WHERE t.id = ANY (ARRAY(SELECT p.id FROM passed p))
        FOR UPDATE OF t SKIP LOCKED
    ), marking AS (
        -- By id alone: the state is written so that it implies no partial index's
        -- predicate (the concatenation hides the column from the planner), or the plan
        -- may read task_queue_turns whole with the ids as a filter.
        UPDATE tasklane.task_queue q
        SET behind = true
        WHERE q.id = ANY (ARRAY(SELECT l.id FROM locked l))
          AND q.state || '' IN ('queued', 'waiting_for_retry') AND NOT q.behind
        RETURNING q.id
    ), raising AS (
        UPDATE tasklane.turn_floors f
        SET floor = least(d.target,
                          (SELECT min(p.turn) FROM passed p
                           WHERE p.task_type = d.task_type AND p.priority = d.priority
                             AND p.id NOT IN (SELECT l.id FROM locked l)))
        FROM due d
        WHERE f.task_type = d.task_type AND f.priority = d.priority
          AND f.floor < d.target
        RETURNING f.task_type
    )
    SELECT (SELECT count(*) FROM raising), (SELECT count(*) FROM marking);
END
$$;

COMMENT ON FUNCTION tasklane.raise_floors(text[], smallint[], double precision[]) IS
$$Raises the claims' floors (tasklane.turn_floors; parallel arrays: task type, priority,
target turn) to their targets, points the claims had got to when the floor keeper read
them with every writer of claimable rows in flight then since finished. Marks behind
every claimable mirror row between a floor and its target first; a passed task another
transaction holds stops its floor below it. A floor another replica is raising (its
advisory lock of class 1953264754, tried) is left to it. Returns the floors raised and
the rows marked behind. Called by the floor keeper (sql/floors_raise.sql).$$;
