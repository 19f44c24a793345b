-- When a task began waiting for its local routes' circuits: an attempt that finds every
-- route it may use open makes no call and ends deferred (settle.sql): it does not count
-- against max_attempts, and the task waits for the earliest reopening. This column
-- bounds how long a task may keep waiting so (the type's circuit_wait_seconds): set at
-- its first deferral in a row, cleared by any other settlement and by the owner's retry.
-- Nullable without a default, so adding it rewrites nothing.
ALTER TABLE tasklane.tasks ADD COLUMN circuit_wait_since timestamptz;
