-- Tasks of app $1 that did not succeed on their first and only claim: not succeeded, past
-- attempt 1, or with more than one task.running event (a lost lease shows here). Unlike
-- verify.sql it allows events of the task's own (progress). Locks: none.
SELECT count(*) FROM tasklane.tasks t
WHERE t.app = $1
  AND (t.state <> 'succeeded' OR t.attempt <> 1
       OR (SELECT count(*) FROM tasklane.task_events e
           WHERE e.task_id = t.id AND e.type = 'task.running') <> 1)
