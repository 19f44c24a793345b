-- V15: what a terminal transition pays for its notifications (issue 14's drain target:
-- with one endpoint subscribed, the drain keeps >= 80% of its rate without). Measured
-- with EXPLAIN ANALYZE of a 10,000-row terminal UPDATE with one endpoint subscribed,
-- the V11 row trigger cost about twice the UPDATE itself: a PL/pgSQL call and an
-- INSERT ... SELECT run once per row (executor start-up and shutdown each time), and
-- the foreign key's check, one more query per inserted row that also takes a KEY SHARE
-- lock on the endpoint row (a MultiXact as soon as two completing transactions hold
-- it at once).
--
-- * The enqueue trigger becomes a statement trigger over the UPDATE's transition
--   tables: one function call and one set-based INSERT per statement, whatever the
--   batch (a group commit of 100 completions pays once). Every UPDATE of tasks now
--   calls it (a statement trigger with transition tables cannot be limited to a
--   column, nor have a WHEN), so it returns at once when no endpoint is enabled and
--   otherwise finds nothing to do in a claim or a heartbeat in one scan of the
--   changed rows. Same rule as before: a row that went from a non-terminal to a
--   terminal state, one notification per subscribed, enabled endpoint of its app.
-- * The deliveries' foreign key to their endpoint goes. Deleting an endpoint deletes
--   its deliveries itself (sql/webhook_endpoint_delete.sql), and a row a concurrent
--   terminal transition wrote for an endpoint deleted meanwhile is deleted by the
--   deliverer's claim, which finds no endpoint for it (sql/webhook_claim.sql).

DROP TRIGGER tasks_enqueue_webhooks ON tasklane.tasks;

CREATE OR REPLACE FUNCTION tasklane.enqueue_webhooks() RETURNS trigger
LANGUAGE plpgsql AS $$
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

CREATE TRIGGER tasks_enqueue_webhooks AFTER UPDATE ON tasklane.tasks
REFERENCING OLD TABLE AS changed_from NEW TABLE AS changed_to
FOR EACH STATEMENT EXECUTE FUNCTION tasklane.enqueue_webhooks();

ALTER TABLE tasklane.webhook_deliveries
    DROP CONSTRAINT webhook_deliveries_endpoint_id_fkey;
