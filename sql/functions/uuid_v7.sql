-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.uuid_v7, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- A UUID of version 7: 48 bits of Unix milliseconds, then random bits (version and
-- variant set), so ids sort by creation like the ids the binary makes. The default of
-- tasklane.webhook_deliveries.id.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function uuid_v7: migrations/V11__webhooks.sql, migrations/V33__function_comments.sql
CREATE FUNCTION tasklane.uuid_v7() RETURNS uuid
    LANGUAGE sql
    AS $$
    -- RFC 9562 version 7: 48 bits of Unix milliseconds, then random bits (version and
    -- variant set), so ids sort by creation like the ids the binary makes.
    SELECT encode(
        set_bit(set_bit(
            overlay(uuid_send(gen_random_uuid())
                    PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                    FROM 1 FOR 6),
            52, 1), 53, 1),
        'hex')::uuid
$$;
