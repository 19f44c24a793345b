-- transition: Succeed
-- Settles a batch of leased tasks as succeeded in one statement (group commit of
-- attempts that finished at about the same time), each fenced on its own lease token,
-- each with its own task.succeeded event. Same effect per task as complete.sql.
-- $1 ids uuid[], $2 lease_tokens uuid[], $3 results jsonb[], $4 usage_units int8[],
-- $5 providers text[], $6 models text[]: parallel arrays, one element per task; the
-- last three may hold NULL elements.
-- Returns (id, lease_token) of each settled task; a pair missing from the answer lost
-- its lease or is gone.
-- Locks: the settled task rows, visited in array order (callers sort by id, so two
-- batches never wait on each other in opposite orders).
WITH input AS (
    SELECT *
    FROM unnest($1::uuid[], $2::uuid[], $3::jsonb[], $4::int8[], $5::text[], $6::text[])
        AS i(id, lease_token, result, usage_units, provider, model)
), done AS (
    UPDATE tasklane.tasks t
    SET state = 'succeeded', result = i.result, usage_units = i.usage_units,
        provider = i.provider, model = i.model,
        finished_at = now(), lease_token = NULL, lease_expires_at = NULL,
        error_code = NULL, error_message = NULL, snapshot = NULL,
        event_seq = t.event_seq + 1
    FROM input i
    -- `t.id = ANY($1)` lets the planner fetch exactly the batch by primary key; joined
    -- to unnest alone it may hash-join over every running task instead.
    WHERE t.id = ANY($1::uuid[])
      AND t.id = i.id AND t.lease_token = i.lease_token AND t.state IN ('running', 'cancelling')
    RETURNING t.id, i.lease_token, t.event_seq, t.attempt, t.finished_at
), event AS (
    INSERT INTO tasklane.task_events (task_id, seq, type, data, at)
    SELECT id, event_seq, 'task.succeeded', jsonb_build_object('attempt', attempt), finished_at
    FROM done
)
SELECT id, lease_token FROM done
