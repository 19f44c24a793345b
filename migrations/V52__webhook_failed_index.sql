-- V52: the failed notifications kept in the delivery log get an index of their own.
-- Forward-only: never edit once landed.
--
-- The webhooks overview (the pending-notification gauges every replica's deliverer
-- samples every 10 s, and the console's overview) counts the failed rows of the log.
-- The only index naming them was webhook_deliveries_finished (status <> 'pending'),
-- which holds every delivered row of the retention too, and the count visited each of
-- those rows in the table: 79,000 pages a call in the soak (1,000 tasks/s, 120 s of
-- retention), 205,000 once a snapshot had been held for ten minutes. Failed rows are
-- few (a notification fails after its whole retry schedule), so their own partial
-- index is small and its count reads little whatever the log holds.

CREATE INDEX webhook_deliveries_failed ON tasklane.webhook_deliveries (endpoint_id)
    WHERE status = 'failed';
