-- Tasks not yet finished (the queue's mirror holds exactly those), for the soak's
-- record of whether the workers keep up. No parameters. Locks: none.
SELECT count(*)::int8 AS unfinished FROM tasklane.task_queue
