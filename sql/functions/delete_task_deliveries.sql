-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.delete_task_deliveries, add a migration that replaces it, then run
-- `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The current definition of tasklane.delete_task_deliveries (pg_dump --schema-only, normalised).
-- The line above it names the migrations that wrote it; their comments say why.

-- function delete_task_deliveries: migrations/V11__webhooks.sql
CREATE FUNCTION tasklane.delete_task_deliveries() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    DELETE FROM tasklane.webhook_deliveries d USING gone g
    WHERE d.task_id = g.id AND d.status <> 'delivered';
    RETURN NULL;
END
$$;
