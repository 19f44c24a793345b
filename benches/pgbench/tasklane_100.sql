-- tasklane's own statements without the engine around them: claim 100 exactly as the
-- local variant of sql/claim.sql does (lease, attempt, task.running event), then settle
-- them as sql/complete_many.sql does (state, result, task.succeeded event), one
-- transaction each. The ceiling the engine's drain can approach on this schema; the gap to the
-- bare baselines is what the schema itself costs per task (indexes, events).
WITH picked AS (
    SELECT id FROM tasklane.tasks
    WHERE state IN ('queued', 'waiting_for_retry') AND run_at <= now() AND task_type = ANY('{noop}')
      AND (deadline_at IS NULL OR deadline_at > now())
    ORDER BY priority DESC, run_at, id LIMIT 100 FOR UPDATE SKIP LOCKED
), claimed AS (
    UPDATE tasklane.tasks t
    SET state = 'running', attempt = t.attempt + 1, lease_token = gen_random_uuid(),
        lease_expires_at = now() + t.lease_seconds * interval '1 second',
        worker_id = 'pgbench-' || :client_id, replica_id = NULL, route = 'local',
        started_at = coalesce(t.started_at, now()), phase = NULL,
        progress = CASE WHEN t.snapshot IS NULL THEN NULL ELSE t.progress END,
        event_seq = t.event_seq + 1
    FROM picked WHERE t.id = picked.id
    RETURNING t.id, t.attempt, t.event_seq
), events AS (
    INSERT INTO tasklane.task_events (task_id, seq, type, data)
    SELECT id, event_seq, 'task.running', jsonb_build_object('attempt', attempt, 'route', 'local') FROM claimed
)
SELECT count(*) FROM claimed;
WITH done AS (
    UPDATE tasklane.tasks t
    SET state = 'succeeded', result = '{}', usage_units = NULL, provider = NULL, model = NULL,
        finished_at = now(), lease_token = NULL, lease_expires_at = NULL,
        error_code = NULL, error_message = NULL, snapshot = NULL, event_seq = t.event_seq + 1
    WHERE t.state IN ('running', 'cancelling') AND t.worker_id = 'pgbench-' || :client_id
    RETURNING t.id, t.event_seq, t.attempt, t.finished_at
), event AS (
    INSERT INTO tasklane.task_events (task_id, seq, type, data, at)
    SELECT id, event_seq, 'task.succeeded', jsonb_build_object('attempt', attempt), finished_at FROM done
)
SELECT count(*) FROM done;
