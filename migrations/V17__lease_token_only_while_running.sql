-- V17: a task holds a lease token only while an attempt runs (state running or
-- cancelling). Every statement that ends or hands back an attempt already clears the
-- token; the constraint makes that a rule of the schema, so a matching token is a
-- complete fence on its own. The batch settle and heartbeat (sql/complete_many.sql,
-- sql/heartbeat_many.sql) rely on it: they no longer test the state beside the token,
-- a test the planner estimated from statistics and answered with a plan quadratic in
-- the batch. Forward-only: never edit once landed.

-- No statement leaves a token on a task that does not run; should an old row have
-- one, it fences nothing (no attempt of that task is running) and goes.
UPDATE tasklane.tasks SET lease_token = NULL
WHERE lease_token IS NOT NULL AND state NOT IN ('running', 'cancelling');

-- NOT VALID: new and updated rows are checked from here on, and the table is locked
-- only as long as this migration's transaction lasts. V18 validates the rows already
-- there in a transaction of its own, which reads and writes do not wait for.
ALTER TABLE tasklane.tasks ADD CONSTRAINT tasks_lease_only_while_running
    CHECK (lease_token IS NULL OR state IN ('running', 'cancelling')) NOT VALID;
