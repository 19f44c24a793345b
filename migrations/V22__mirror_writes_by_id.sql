-- V22: the queue mirror's update trigger finds its rows by id, and it writes the
-- terminal notifications (issue 16, the drain; issue 14, the drain with an endpoint).
-- Forward-only: never edit once landed.
--
-- Measured with auto_explain during a drain of 10,000 tasks (two claim loops, batches of
-- 100): the mirror's upsert joined the statement's rows to task_queue with a hash join
-- over a sequential scan of the whole mirror, once per claim and per settle (a hundred
-- changed rows against a 10,000-row estimate of the mirror: the planner costs a hundred
-- index probes above one scan). So each claim read every queued task, and the
-- longer the backlog, the dearer each claim. The terminal notifications' statement
-- trigger (V15) joined the OLD and NEW transition tables, which have no statistics: the
-- terminal rows were estimated at one, and about half its calls planned a nested loop
-- that rescanned the whole OLD table for each changed row (quadratic in the batch).
--
-- * The upsert tests each changed row against its mirror row in a scalar subquery (a
--   subplan PostgreSQL never turns into a join): one probe of the primary key per row,
--   whatever the mirror's size. Same rule as V14: a live row is written only when a
--   mirrored field changed (progress alone writes nothing); a new row is inserted.
-- * A task that became terminal in this statement is exactly a changed row whose mirror
--   row still exists: the mirror holds the live tasks and nothing else, kept in the same
--   statement by these triggers. So the mirror's delete returns the tasks that ended,
--   and when an endpoint is enabled the same statement writes their notifications (one
--   per subscribed, enabled endpoint of the task's app), then NOTIFYs the deliverers
--   once. The old trigger goes, and with it the OLD transition table every UPDATE of
--   tasks captured for it. Same rule as V11/V15: a task that went from a live to a
--   terminal state is notified, once per endpoint, in the transaction that ended it;
--   an update of a task that was already terminal (a release) notifies nothing.
-- This rests on the mirror holding every live task, which its triggers keep in the same
-- statement. A live task without its mirror row (written while triggers were bypassed,
-- `session_replication_role = replica`, or by hand) is claimed by no one and, if it
-- then ends, notifies no one: restore such a row rather than bypass the triggers.
-- An older binary beside this one runs the same triggers (they are the database's):
-- nothing of its own changes.

CREATE OR REPLACE FUNCTION tasklane.sync_task_queue() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    written bigint;
BEGIN
    IF EXISTS (SELECT 1 FROM tasklane.webhook_endpoints WHERE NOT disabled) THEN
        WITH ended AS (
            DELETE FROM tasklane.task_queue q USING fresh n
            WHERE q.id = n.id AND n.state IN ('succeeded', 'failed', 'cancelled')
            RETURNING n.id, n.app, n.scope_id, n.state, n.finished_at
        )
        INSERT INTO tasklane.webhook_deliveries
            (endpoint_id, app, scope_id, task_id, event, created_at)
        SELECT e.id, d.app, d.scope_id, d.id, 'task.' || d.state, coalesce(d.finished_at, now())
        FROM ended d
        JOIN tasklane.webhook_endpoints e
          ON e.app = d.app AND NOT e.disabled AND ('task.' || d.state) = ANY (e.events);
        GET DIAGNOSTICS written = ROW_COUNT;
        -- The deliverers of every replica LISTEN: one NOTIFY per statement that wrote.
        IF written > 0 THEN
            PERFORM pg_notify('tasklane_webhooks', '');
        END IF;
    ELSE
        DELETE FROM tasklane.task_queue q USING fresh n
        WHERE q.id = n.id AND n.state IN ('succeeded', 'failed', 'cancelled');
    END IF;
    INSERT INTO tasklane.task_queue AS q
        (id, state, priority, run_at, deadline_at, lease_expires_at, task_type, app,
         scope_id, privacy, resource)
    SELECT n.id, n.state, n.priority, n.run_at, n.deadline_at, n.lease_expires_at,
           n.task_type, n.app, n.scope_id, n.privacy, n.resource
    FROM fresh n
    WHERE n.state NOT IN ('succeeded', 'failed', 'cancelled')
      AND coalesce((SELECT (o.state, o.priority, o.run_at, o.deadline_at, o.lease_expires_at)
                           IS DISTINCT FROM
                           (n.state, n.priority, n.run_at, n.deadline_at, n.lease_expires_at)
                    FROM tasklane.task_queue o WHERE o.id = n.id), true)
    ON CONFLICT (id) DO UPDATE
    SET state = excluded.state, priority = excluded.priority, run_at = excluded.run_at,
        deadline_at = excluded.deadline_at, lease_expires_at = excluded.lease_expires_at;
    RETURN NULL;
END
$$;

DROP TRIGGER tasks_enqueue_webhooks ON tasklane.tasks;
DROP FUNCTION tasklane.enqueue_webhooks();
