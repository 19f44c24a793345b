-- API tokens, and the notification that lets every replica's HTTP waiters (?wait=, SSE)
-- hear of a task's new events. Forward-only: never edit once landed.

-- Only the SHA-256 of a token is stored; the token itself is printed once at creation.
CREATE TABLE tasklane.api_tokens (
    id          uuid PRIMARY KEY,
    app         text NOT NULL,
    -- A scope token sees only this scope, with the redacted view; NULL: the whole app.
    scope_id    text,
    permissions text[] NOT NULL,
    name        text,
    token_hash  bytea NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);

-- A NOTIFY per task per transaction that ends it (terminal event) or streams worker
-- output, whoever the writer is: store code, the SQL API functions, or a future
-- statement. PostgreSQL folds duplicates within a transaction and delivers at commit.
-- Other events (queued, running, progress) are not notified: a notifying commit takes a
-- cluster-wide lock, so the HTTP layer's shared poll (one query per replica) picks them
-- up instead. A statement-level trigger with a transition table keeps batch writes to
-- one trigger call.
CREATE FUNCTION tasklane.notify_task_events() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('tasklane_events', t.task_id::text)
    FROM (SELECT DISTINCT task_id FROM new_events
          WHERE type IN ('task.succeeded', 'task.failed', 'task.cancelled', 'task.output')) t;
    RETURN NULL;
END
$$;

CREATE TRIGGER task_events_notify
    AFTER INSERT ON tasklane.task_events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION tasklane.notify_task_events();
