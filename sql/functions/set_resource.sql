-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.set_resource, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Creates or resizes a resource (sql/resource_set.sql, the admin API): at most p_slots
-- tasks whose type names resource p_name run at once, cluster-wide, each holding one of
-- its slots (taken by the claim). Resized by tasklane.resize_slots. Locks: the resource's
-- row and slots.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function set_resource: migrations/V3__admission.sql, migrations/V33__function_comments.sql
CREATE FUNCTION tasklane.set_resource(p_name text, p_slots integer) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO tasklane.resources AS r (name, slots) VALUES (p_name, p_slots)
    ON CONFLICT (name) DO UPDATE SET slots = excluded.slots, updated_at = now();
    PERFORM tasklane.resize_slots('tasklane.resource_slots', 'resource', p_name, 'text', p_slots);
END
$$;
