-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.enqueue_webhooks, add a migration that replaces it, then run
-- `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The current definition of tasklane.enqueue_webhooks (pg_dump --schema-only, normalised).
-- The line above it names the migrations that wrote it; their comments say why.

-- function enqueue_webhooks: migrations/V11__webhooks.sql
CREATE FUNCTION tasklane.enqueue_webhooks() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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
