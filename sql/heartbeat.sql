-- Extends a lease (up to the attempt's deadline) and records what the worker reports,
-- fenced on the lease token.
-- $1 id, $2 lease_token, $3 progress (nullable int2), $4 phase (nullable),
-- $5 snapshot (nullable jsonb), $6 events: jsonb array of {"type","data"} (may be empty),
-- written with the next contiguous seqs.
-- Returns (state, lease_expires_at, attempt); no row when the lease is lost or the task
-- gone.
-- Locks: the task row.
WITH beat AS (
    UPDATE tasklane.tasks t
    -- Never past the attempt's deadline (NULL on an attempt claimed before attempts had
    -- deadlines: no cap).
    SET lease_expires_at = least(now() + t.lease_seconds * interval '1 second',
                                 t.attempt_deadline_at),
        progress = coalesce($3, t.progress),
        phase = coalesce($4, t.phase),
        snapshot = coalesce($5, t.snapshot),
        event_seq = t.event_seq + jsonb_array_length($6)
    WHERE t.id = $1 AND t.lease_token = $2 AND t.state IN ('running', 'cancelling')
    RETURNING t.id, t.state, t.lease_expires_at, t.attempt, t.event_seq - jsonb_array_length($6) AS base_seq
), events AS (
    INSERT INTO tasklane.task_events (task_id, seq, type, data)
    SELECT beat.id, beat.base_seq + e.ord, e.value ->> 'type', coalesce(e.value -> 'data', '{}')
    FROM beat, jsonb_array_elements($6) WITH ORDINALITY AS e(value, ord)
)
SELECT state, lease_expires_at, attempt FROM beat
