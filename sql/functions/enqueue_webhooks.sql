-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.enqueue_webhooks, add a migration that replaces it, then run
-- `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The current definition of tasklane.enqueue_webhooks (pg_dump --schema-only, normalised).
-- The line above it names the migrations that wrote it; their comments say why.

-- function enqueue_webhooks: migrations/V11__webhooks.sql, migrations/V15__webhook_outbox_cost.sql
CREATE FUNCTION tasklane.enqueue_webhooks() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    written bigint;
BEGIN
    -- Most deployments, and every app without endpoints, stop here.
    IF NOT EXISTS (SELECT 1 FROM tasklane.webhook_endpoints WHERE NOT disabled) THEN
        RETURN NULL;
    END IF;
    INSERT INTO tasklane.webhook_deliveries (endpoint_id, app, scope_id, task_id, event, created_at)
    SELECT e.id, n.app, n.scope_id, n.id, 'task.' || n.state, coalesce(n.finished_at, now())
    FROM changed_to n
    JOIN changed_from o ON o.id = n.id
    JOIN tasklane.webhook_endpoints e
      ON e.app = n.app AND NOT e.disabled AND ('task.' || n.state) = ANY (e.events)
    WHERE n.state IN ('succeeded', 'failed', 'cancelled')
      AND o.state NOT IN ('succeeded', 'failed', 'cancelled');
    GET DIAGNOSTICS written = ROW_COUNT;
    -- The deliverers of every replica LISTEN: one NOTIFY per statement that wrote.
    IF written > 0 THEN
        PERFORM pg_notify('tasklane_webhooks', '');
    END IF;
    RETURN NULL;
END
$$;
