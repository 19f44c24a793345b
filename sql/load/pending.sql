-- Whether app $1 still has unfinished tasks. Cheap enough to poll during a drain: the mirror
-- holds only live tasks, so finished rows are never visited.
-- $1 app. Locks: none.
SELECT EXISTS (SELECT 1 FROM tasklane.task_queue WHERE app = $1) AS pending
