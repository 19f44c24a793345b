-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.resize_slots, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- Makes the slot table p_table (capacity_slots or resource_slots) hold p_n live slots for
-- the key p_key_column = p_key (of SQL type p_key_type): un-retires and then adds slots
-- to grow; to shrink, deletes free slots and retires held ones, which are deleted when
-- their tasks give them back (the release triggers), so a lowered limit never takes a
-- slot from a running task. Called by tasklane.set_limit and set_resource.
-- Locks: every slot row of the key (FOR UPDATE) until the transaction ends.
--
-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.

-- function resize_slots: migrations/V3__admission.sql, migrations/V33__function_comments.sql
CREATE FUNCTION tasklane.resize_slots(p_table regclass, p_key_column text, p_key text, p_key_type text, p_n integer) RETURNS void
    LANGUAGE plpgsql
    AS $_$
DECLARE
    k text := format('%I = $1::%s', p_key_column, p_key_type);
    total integer;
    retired_count integer;
    live integer;
    deleted integer;
BEGIN
    EXECUTE format('SELECT count(*), count(*) FILTER (WHERE retired)
                    FROM (SELECT retired FROM %s WHERE %s FOR UPDATE) s', p_table, k)
        INTO total, retired_count USING p_key;
    live := total - retired_count;
    IF p_n >= live THEN
        EXECUTE format('UPDATE %s SET retired = false WHERE %s AND slot IN (
                            SELECT slot FROM %s WHERE %s AND retired ORDER BY slot LIMIT $2)',
                       p_table, k, p_table, k)
            USING p_key, p_n - live;
        live := least(p_n, total);
        IF p_n > live THEN
            EXECUTE format('INSERT INTO %s (%I, slot)
                            SELECT $1::%s, coalesce((SELECT max(slot) FROM %s WHERE %s), -1) + g
                            FROM generate_series(1, $2) g', p_table, p_key_column, p_key_type, p_table, k)
                USING p_key, p_n - live;
        END IF;
        RETURN;
    END IF;
    EXECUTE format('WITH gone AS (
                        DELETE FROM %s WHERE %s AND slot IN (
                            SELECT slot FROM %s WHERE %s AND task_id IS NULL ORDER BY slot DESC LIMIT $2)
                        RETURNING 1)
                    SELECT count(*) FROM gone', p_table, k, p_table, k)
        INTO deleted USING p_key, live - p_n;
    IF live - deleted > p_n THEN
        EXECUTE format('UPDATE %s SET retired = true WHERE %s AND slot IN (
                            SELECT slot FROM %s WHERE %s AND NOT retired ORDER BY slot DESC LIMIT $2)',
                       p_table, k, p_table, k)
            USING p_key, live - deleted - p_n;
    END IF;
END
$_$;
