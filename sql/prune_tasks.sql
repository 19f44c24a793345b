-- One pruning pass: deletes at most $2 terminal tasks whose released_at and finished_at
-- are both older than the retention. Unreleased or unfinished tasks are never selected.
-- Events, attempts, webhook deliveries and the mirror row go with their task (the
-- statement-level AFTER DELETE triggers on tasklane.tasks delete them).
-- $1 retention in seconds (float8), $2 limit, $3 now (nullable: the database clock;
-- tests move it), $4 the least released_at to consider (nullable: from the start).
-- Returns how many were deleted and the latest released_at among them.
-- Locks: the selected rows FOR UPDATE SKIP LOCKED, so any number of replicas prune at
-- once without waiting on or double counting each other (and skip rows an owner
-- deletion holds). The CTE bounds the rows to $2.
-- Scans tasks_released in release order (an index on released_at alone: finished_at
-- and state change on the hot path, and an index naming them would make every settle a
-- non-HOT update); finished_at and state are filtered on the rows it hands over.
-- The scan starts at $4: the index keeps an entry for every task deleted while an older
-- snapshot is open (a long pg_dump, a forgotten transaction), and a pass from the start
-- would step over all of them, every pass.
WITH doomed AS (
    SELECT id FROM tasklane.tasks
    WHERE released_at IS NOT NULL
      AND released_at >= coalesce($4::timestamptz, '-infinity')
      AND released_at < coalesce($3::timestamptz, now()) - $1::float8 * interval '1 second'
      AND finished_at < coalesce($3::timestamptz, now()) - $1::float8 * interval '1 second'
      AND state IN ('succeeded', 'failed', 'cancelled')
    ORDER BY released_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM tasklane.tasks t USING doomed WHERE t.id = doomed.id
    RETURNING t.released_at
)
SELECT count(*) AS pruned, max(released_at) AS reached FROM gone
