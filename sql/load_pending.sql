-- Whether app $1 still has unfinished tasks. Cheap enough to poll during a drain: each
-- arm matches the predicate of a partial index (tasks_claimable, tasks_leased), so
-- finished rows are never visited.
-- $1 app. Locks: none.
SELECT EXISTS (SELECT 1 FROM tasklane.tasks WHERE state IN ('queued', 'waiting_for_retry') AND app = $1)
    OR EXISTS (SELECT 1 FROM tasklane.tasks WHERE state IN ('running', 'cancelling') AND app = $1)
    AS pending
