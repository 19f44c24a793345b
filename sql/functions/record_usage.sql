-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.record_usage, add a migration that replaces it, then run
-- `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The current definition of tasklane.record_usage (pg_dump --schema-only, normalised).
-- The line above it names the migrations that wrote it; their comments say why.

-- function record_usage: migrations/V3__admission.sql
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
