-- Raises floors ($1 task types, $2 priorities, $3 turns: each floor's target) to their
-- targets, points the claims had got to when sql/floors_read.sql last read them, with
-- every writer in flight then since finished: every claimable mirror row below a
-- target is then committed and visible to this statement's snapshot, and every later
-- writer took a turn at or above it. Each claimable row the claims have passed (turn
-- between the floor and the target, not yet behind) is first marked behind: those
-- leave task_queue_claimable for task_queue_behind, which claims read whole. The passed
-- rows are found on the claimable index from the old floor, so each dead entry of a
-- claimed task is walked by one raise, not by every claim.
-- A passed task whose row another transaction holds (a claim that locked it, a writer
-- of it) is not waited for: the floor then stops at the lowest such turn, and the next
-- raise passes it. Rows are locked as everywhere, the task row first (FOR UPDATE SKIP
-- LOCKED), its mirror row after. A floor another replica is raising (its transaction
-- advisory lock of class 1953264754, tried, never waited for) is left to it.
-- Locks: the raisers' advisory locks of the raised floors, the passed tasks' rows and
-- mirror rows, the raised turn_floors rows.
WITH due AS MATERIALIZED (
    SELECT f.task_type, f.priority, f.floor, g.target
    FROM unnest($1::text[], $2::smallint[], $3::float8[]) AS g(task_type, priority, target)
    JOIN tasklane.turn_floors f ON f.task_type = g.task_type AND f.priority = g.priority
    WHERE g.target > f.floor
      -- The class 0x746c7472 is the raisers' alone.
      AND pg_try_advisory_xact_lock(1953264754, hashtext(g.task_type || '/' || g.priority))
), passed AS MATERIALIZED (
    SELECT q.id, q.task_type, q.priority, q.turn
    FROM due d
    JOIN tasklane.task_queue q
      ON q.task_type = d.task_type AND q.priority = d.priority
     AND q.state IN ('queued', 'waiting_for_retry') AND NOT q.behind
     AND q.turn >= d.floor AND q.turn < d.target
), locked AS MATERIALIZED (
    SELECT t.id
    FROM tasklane.tasks t
    WHERE t.id = ANY (ARRAY(SELECT p.id FROM passed p))
    FOR UPDATE OF t SKIP LOCKED
), marked AS (
    UPDATE tasklane.task_queue q
    SET behind = true
    WHERE q.id = ANY (ARRAY(SELECT l.id FROM locked l))
      AND q.state IN ('queued', 'waiting_for_retry') AND NOT q.behind
    RETURNING q.id
), raised AS (
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
SELECT (SELECT count(*) FROM raised) AS raised, (SELECT count(*) FROM marked) AS marked
