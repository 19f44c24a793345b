-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.record_usage, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Trigger function of tasks_record_usage (AFTER UPDATE OF state ON tasklane.tasks, per
-- row, when a task with usage units reaches a final state): adds the units to today's (UTC
-- day of finished_at) budget_usage of its app and subject, on one of eight random stripes
-- so concurrent settlements rarely wait on one row. The group commit charges its own tasks
-- in its statement instead. Locks: the stripe's row.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function record_usage: migrations/V3__admission.sql, migrations/V33__function_comments.sql
CREATE FUNCTION tasklane.record_usage() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO tasklane.budget_usage AS u (app, usage_subject, day, stripe, units)
    VALUES (NEW.app, coalesce(NEW.usage_subject, ''),
            (coalesce(NEW.finished_at, now()) AT TIME ZONE 'UTC')::date,
            floor(random() * 8)::smallint, NEW.usage_units)
    ON CONFLICT (app, usage_subject, day, stripe) DO UPDATE SET units = u.units + excluded.units;
    RETURN NULL;
END
$$;
