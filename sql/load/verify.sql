-- Checks a drained run: every task of app $1 succeeded with exactly the events
-- task.queued, task.running, task.succeeded at seqs 1, 2, 3. Returns the number of
-- tasks and how many break that.
-- $1 app. Locks: none.
SELECT count(*) AS tasks,
       count(*) FILTER (WHERE NOT (
           t.state = 'succeeded' AND t.event_seq = 3
           AND (SELECT array_agg(e.type ORDER BY e.seq) FROM tasklane.task_events e WHERE e.task_id = t.id)
               = ARRAY['task.queued', 'task.running', 'task.succeeded']
           AND (SELECT array_agg(e.seq ORDER BY e.seq) FROM tasklane.task_events e WHERE e.task_id = t.id)
               = ARRAY[1, 2, 3])) AS broken
FROM tasklane.tasks t
WHERE t.app = $1
