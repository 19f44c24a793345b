-- V9: one row per attempt (issue 12). An attempt's row is written when it ends, in the
-- same statement as the settlement that ends it (complete, settle, the rescuer's lost
-- leases, a cold start, a hand back, the attempt-deadline sweep), never inserted at the
-- claim and updated later: the running attempt is read from the task row itself
-- (attempt_started_at, route, worker), so the claim and the drain pay one insert per
-- attempt and nothing more.
CREATE TABLE tasklane.task_attempts (
    task_id       uuid NOT NULL,
    -- Counts over the task's whole life: tasks.attempts_before + tasks.attempt, so an
    -- owner's retry (which gives the task a fresh attempt budget) never reuses a number.
    attempt       integer NOT NULL,
    route         text,
    route_name    text,
    provider      text,
    model         text,
    worker_id     text,
    replica_id    uuid,
    started_at    timestamptz NOT NULL,
    finished_at   timestamptz NOT NULL,
    outcome       text NOT NULL CHECK (outcome IN ('succeeded', 'retry', 'fallback', 'failed',
                                                   'cancelled', 'lost', 'timed_out')),
    error_code    text,
    error_message text,
    input_tokens  bigint,
    output_tokens bigint,
    total_tokens  bigint,
    -- The budget units this attempt was charged: the reported units, else total_tokens.
    usage_units   bigint,
    PRIMARY KEY (task_id, attempt)
);

-- The running attempt's start and server-side deadline (claim time +
-- attempt_timeout_seconds; the lease never outlives it), and the attempts of the task's
-- earlier runs (before an owner's retry reset `attempt`).
ALTER TABLE tasklane.tasks
    ADD COLUMN attempt_started_at timestamptz,
    ADD COLUMN attempt_deadline_at timestamptz,
    ADD COLUMN attempts_before integer NOT NULL DEFAULT 0;

-- Attempts go with their task (pruning, owner deletion), like its events: one
-- statement-level delete per deleting statement instead of a foreign key, whose check
-- would cost every attempt insert a lookup of the task row.
CREATE FUNCTION tasklane.delete_task_attempts() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM tasklane.task_attempts a USING gone g WHERE a.task_id = g.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER tasks_delete_attempts
    AFTER DELETE ON tasklane.tasks
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION tasklane.delete_task_attempts();

-- Budgets are charged from attempts now: each statement that ends an attempt charges
-- the usage it reported (failed attempts included). The V3 trigger tasks_record_usage,
-- which charges tasks.usage_units when a task finishes, stays for binaries older than
-- this migration during a rolling upgrade (their completions set usage_units); binaries
-- of this version never set usage_units, so nothing is charged twice.
