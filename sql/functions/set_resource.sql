-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.set_resource, add a migration that replaces it, then run
-- `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The current definition of tasklane.set_resource (pg_dump --schema-only, normalised).
-- The line above it names the migrations that wrote it; their comments say why.

-- function set_resource: migrations/V3__admission.sql
CREATE FUNCTION tasklane.set_resource(p_name text, p_slots integer) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO tasklane.resources AS r (name, slots) VALUES (p_name, p_slots)
    ON CONFLICT (name) DO UPDATE SET slots = excluded.slots, updated_at = now();
    PERFORM tasklane.resize_slots('tasklane.resource_slots', 'resource', p_name, 'text', p_slots);
END
$$;
