-- The last event seq of each of these tasks, for the HTTP layer's shared poll of the
-- tasks someone waits on (deleted tasks are absent). $1 ids uuid[]. Locks: none.
SELECT id, event_seq FROM tasklane.tasks WHERE id = ANY($1)
