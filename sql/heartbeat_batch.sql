-- Extends the leases of a remote worker's batch in one statement (each up to its
-- attempt's deadline), each fenced on its own lease token and on the owner the worker's
-- token speaks for, and records each item's progress (with its task.progress event, as
-- heartbeat.sql writes it) and snapshot.
-- $1 ids uuid[] (sorted), $2 lease_tokens uuid[], $3 progress int2[], $4 snapshots
-- jsonb[]: parallel arrays, one element per item, NULL where an item reports nothing;
-- $5 app, $6 scope_id (NULL: any scope of the app).
-- Returns (id, attempt, state, lease_expires_at) of each extended lease; an id missing
-- from the answer lost its lease, is gone, or is another owner's
-- (lease_probe_owned.sql tells which).
-- Locks: the extended task rows, in id order (the order heartbeat_many.sql and
-- complete_many.sql take them in).
WITH input AS (
    SELECT *
    FROM unnest($1::uuid[], $2::uuid[], $3::int2[], $4::jsonb[])
        AS b (id, lease_token, progress, snapshot)
), beat AS (
    UPDATE tasklane.tasks t
    -- Never past the attempt's deadline (NULL on an attempt claimed before attempts had
    -- deadlines: no cap).
    SET lease_expires_at = least(now() + t.lease_seconds * interval '1 second',
                                 t.attempt_deadline_at),
        progress = coalesce(b.progress, t.progress),
        snapshot = coalesce(b.snapshot, t.snapshot),
        event_seq = t.event_seq + (b.progress IS NOT NULL)::int
    FROM input b
    -- The lease token alone fences the state: a CHECK constraint keeps a token only on
    -- a running or cancelling task (see heartbeat_many.sql).
    WHERE t.id = ANY($1::uuid[]) AND t.id = b.id AND t.lease_token = b.lease_token
      AND t.app = $5 AND ($6::text IS NULL OR t.scope_id = $6::text)
    RETURNING t.id, t.attempt, t.state, t.lease_expires_at, t.event_seq, b.progress
), events AS (
    INSERT INTO tasklane.task_events (task_id, seq, type, data)
    SELECT id, event_seq, 'task.progress',
           jsonb_build_object('progress', progress, 'phase', NULL)
    FROM beat
    WHERE progress IS NOT NULL
)
SELECT id, attempt, state, lease_expires_at FROM beat
