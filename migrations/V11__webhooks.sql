-- V11: terminal notifications (webhooks, issue 14). An app registers endpoints; every
-- transition of a task into a terminal state writes one outbox row per subscribed
-- endpoint of its app in the same transaction (a trigger, so every path that makes a
-- task terminal, present or future, is covered without touching its statement), and
-- the maintenance role of any replica delivers the rows at least once.
--
-- * webhook_endpoints: per app and name; the events it wants; disabled after a 410.
-- * webhook_secrets: an endpoint's signing secrets. The current one has no expiry; a
--   rotation gives the previous one 24 h, during which deliveries carry a signature
--   per live secret. Secrets are kept in clear: signing needs them (they never leave
--   through a log, an error or a view, only in the answer that creates them).
-- * webhook_deliveries: the outbox and the delivery log at once. A row is claimed by
--   moving next_attempt_at one lease ahead with a fresh claim_token (the fencing token
--   of its outcome write), so a killed deliverer's rows come due again by themselves.
--   The payload is not copied: the task view is read at delivery time (a terminal row
--   changes no more, except released_at), which keeps the terminal transition's extra
--   write small.

CREATE FUNCTION tasklane.uuid_v7() RETURNS uuid
LANGUAGE sql VOLATILE AS $$
    -- RFC 9562 version 7: 48 bits of Unix milliseconds, then random bits (version and
    -- variant set), so ids sort by creation like the ids the binary makes.
    SELECT encode(
        set_bit(set_bit(
            overlay(uuid_send(gen_random_uuid())
                    PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                    FROM 1 FOR 6),
            52, 1), 53, 1),
        'hex')::uuid
$$;

CREATE TABLE tasklane.webhook_endpoints (
    id         uuid PRIMARY KEY,
    app        text NOT NULL,
    name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    url        text NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
    events     text[] NOT NULL
        CHECK (cardinality(events) >= 1
               AND events <@ ARRAY['task.succeeded', 'task.failed', 'task.cancelled']),
    disabled   boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT webhook_endpoints_name UNIQUE (app, name)
);

CREATE TABLE tasklane.webhook_secrets (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_id uuid NOT NULL REFERENCES tasklane.webhook_endpoints (id) ON DELETE CASCADE,
    secret      text NOT NULL CHECK (secret LIKE 'whsec\_%' AND length(secret) <= 200),
    created_at  timestamptz NOT NULL DEFAULT now(),
    -- NULL: the current secret; otherwise it still signs until then.
    expires_at  timestamptz
);

CREATE INDEX webhook_secrets_endpoint ON tasklane.webhook_secrets (endpoint_id);
-- One current secret per endpoint.
CREATE UNIQUE INDEX webhook_secrets_current ON tasklane.webhook_secrets (endpoint_id)
    WHERE expires_at IS NULL;

CREATE TABLE tasklane.webhook_deliveries (
    -- Also the `webhook-id` header: the same on every attempt of one notification.
    id              uuid PRIMARY KEY DEFAULT tasklane.uuid_v7(),
    endpoint_id     uuid NOT NULL REFERENCES tasklane.webhook_endpoints (id) ON DELETE CASCADE,
    app             text NOT NULL,
    scope_id        text NOT NULL,
    task_id         uuid NOT NULL,
    event           text NOT NULL
        CHECK (event IN ('task.succeeded', 'task.failed', 'task.cancelled')),
    -- When the task became terminal (the body's `timestamp`).
    created_at      timestamptz NOT NULL DEFAULT now(),
    status          text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'delivered', 'failed')),
    -- Attempts started (counted at claim).
    attempts        integer NOT NULL DEFAULT 0,
    -- Pending: when it is due (while an attempt is in flight: when that attempt's claim
    -- runs out and another deliverer may take it).
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    claim_token     uuid,
    last_status     integer,
    last_error      text CHECK (length(last_error) <= 1024),
    delivered_at    timestamptz,
    -- Delivered or failed: when (the retention clock of the log row).
    finished_at     timestamptz
);

CREATE INDEX webhook_deliveries_due ON tasklane.webhook_deliveries (next_attempt_at)
    WHERE status = 'pending';
CREATE INDEX webhook_deliveries_log ON tasklane.webhook_deliveries (endpoint_id, id DESC);
CREATE INDEX webhook_deliveries_task ON tasklane.webhook_deliveries (task_id)
    WHERE status <> 'delivered';
CREATE INDEX webhook_deliveries_finished ON tasklane.webhook_deliveries (finished_at)
    WHERE status <> 'pending';

-- One row per subscribed, enabled endpoint of the task's app; the deliverers of every
-- replica LISTEN on tasklane_webhooks (one NOTIFY per transaction, whatever the count).
CREATE FUNCTION tasklane.enqueue_webhooks() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tasklane.webhook_deliveries (endpoint_id, app, scope_id, task_id, event, created_at)
    SELECT e.id, NEW.app, NEW.scope_id, NEW.id, 'task.' || NEW.state,
           coalesce(NEW.finished_at, now())
    FROM tasklane.webhook_endpoints e
    WHERE e.app = NEW.app AND NOT e.disabled AND ('task.' || NEW.state) = ANY (e.events);
    IF FOUND THEN
        PERFORM pg_notify('tasklane_webhooks', '');
    END IF;
    RETURN NULL;
END
$$;

-- A row trigger whose WHEN is checked without calling the function: only the terminal
-- transition itself pays for it (claims, heartbeats and retries do not). A statement
-- trigger with transition tables cannot name the column and would pay on every UPDATE.
CREATE TRIGGER tasks_enqueue_webhooks AFTER UPDATE OF state ON tasklane.tasks
FOR EACH ROW
WHEN (NEW.state IN ('succeeded', 'failed', 'cancelled')
      AND OLD.state NOT IN ('succeeded', 'failed', 'cancelled'))
EXECUTE FUNCTION tasklane.enqueue_webhooks();

-- Deleted tasks (owner deletion, pruning) take their undelivered notifications with
-- them: nothing about a deleted owner is sent afterwards. Delivered rows stay as the
-- endpoint's log (they hold no task content) until their own retention.
CREATE FUNCTION tasklane.delete_task_deliveries() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM tasklane.webhook_deliveries d USING gone g
    WHERE d.task_id = g.id AND d.status <> 'delivered';
    RETURN NULL;
END
$$;

CREATE TRIGGER tasks_delete_deliveries AFTER DELETE ON tasklane.tasks
REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
EXECUTE FUNCTION tasklane.delete_task_deliveries();
