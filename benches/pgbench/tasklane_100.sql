-- tasklane's own statements without the engine around them: claim 100 exactly as the
-- local variant of sql/claim.sql does (candidates from the mirror task_queue in turn
-- order, locks on tasks; lease, attempt and its clock, the mirror rows, task.running
-- event, where the claims have got), then
-- settle them as tasklane.complete_tasks_claiming (called by sql/complete_many.sql) does
-- (state, result, the mirror rows, notifications, task.succeeded event, the attempt's
-- row, the budget charge of reported usage: none here; the client's tasks found by a
-- join, not by ids), one transaction each. The ceiling the engine's drain can approach on this schema; the gap to the
-- bare baselines is what the schema itself costs per task (indexes, events).
WITH picked AS (
    SELECT c.id, c.priority, c.turn FROM unnest('{noop}'::text[]) AS ty(name)
    CROSS JOIN LATERAL (
        SELECT t.id, q.priority, q.turn FROM tasklane.task_queue q JOIN tasklane.tasks t ON t.id = q.id
        WHERE q.state IN ('queued', 'waiting_for_retry') AND q.run_at <= now() AND q.task_type = ty.name
          AND (q.deadline_at IS NULL OR q.deadline_at > now())
          AND t.state IN ('queued', 'waiting_for_retry') AND t.run_at <= now()
        ORDER BY q.priority DESC, q.turn, q.id LIMIT 100 FOR UPDATE OF t SKIP LOCKED) c
    ORDER BY c.priority DESC, c.turn, c.id LIMIT 100
), claimed AS (
    UPDATE tasklane.tasks t
    SET state = 'running', attempt = t.attempt + 1, lease_token = gen_random_uuid(),
        lease_expires_at = now() + least(t.lease_seconds, t.attempt_timeout_seconds) * interval '1 second',
        attempt_started_at = now(),
        attempt_deadline_at = now() + t.attempt_timeout_seconds * interval '1 second',
        worker_id = 'pgbench-' || :client_id, replica_id = NULL, route = 'local',
        started_at = coalesce(t.started_at, now()), phase = NULL,
        progress = CASE WHEN t.snapshot IS NULL THEN NULL ELSE t.progress END,
        event_seq = t.event_seq + 1
    WHERE t.id = ANY (ARRAY(SELECT p.id FROM picked p))
    RETURNING t.id, t.attempt, t.event_seq, t.attempt_deadline_at, t.lease_expires_at
), mirrored AS (
    UPDATE tasklane.task_queue q SET state = 'running', lease_expires_at = c.lease_expires_at
    FROM claimed c WHERE q.id = c.id
    RETURNING set_config('tasklane.queue_written', 'on', true)
), events AS (
    INSERT INTO tasklane.task_events (task_id, seq, type, data)
    SELECT id, event_seq, 'task.running', jsonb_build_object('attempt', attempt, 'route', 'local') FROM claimed
), advanced AS (
    UPDATE tasklane.turn_points p SET turn = r.turn
    FROM (SELECT priority, max(turn) AS turn FROM picked GROUP BY priority) r
    WHERE p.task_type = 'noop' AND p.priority = r.priority AND p.turn < r.turn
      AND (p.task_type, p.priority) IN (
          SELECT x.task_type, x.priority FROM tasklane.turn_points x
          WHERE x.task_type = 'noop' FOR UPDATE OF x SKIP LOCKED)
)
SELECT count(*) FROM claimed;
WITH done AS (
    UPDATE tasklane.tasks t
    SET state = 'succeeded', result = '{}', provider = NULL, model = NULL,
        finished_at = now(), lease_token = NULL, lease_expires_at = NULL,
        error_code = NULL, error_message = NULL, snapshot = NULL, event_seq = t.event_seq + 1
    FROM tasklane.task_queue q
    WHERE q.state IN ('running', 'cancelling') AND t.id = q.id
      AND t.state IN ('running', 'cancelling') AND t.worker_id = 'pgbench-' || :client_id
    RETURNING t.id, t.event_seq, t.attempt, t.finished_at, t.app, t.usage_subject,
              t.attempts_before, t.worker_id, t.replica_id, t.attempt_started_at, t.route,
              t.scope_id
), dequeued AS (
    DELETE FROM tasklane.task_queue q USING done d WHERE q.id = d.id
    RETURNING set_config('tasklane.queue_written', 'on', true)
), notified AS (
    INSERT INTO tasklane.webhook_deliveries (endpoint_id, app, scope_id, task_id, event, created_at)
    SELECT e.id, d.app, d.scope_id, d.id, 'task.succeeded', d.finished_at
    FROM done d
    JOIN tasklane.webhook_endpoints e
      ON e.app = d.app AND NOT e.disabled AND 'task.succeeded' = ANY (e.events)
    RETURNING pg_notify('tasklane_webhooks', '')
), event AS (
    INSERT INTO tasklane.task_events (task_id, seq, type, data, at)
    SELECT id, event_seq, 'task.succeeded', jsonb_build_object('attempt', attempt), finished_at FROM done
), attempt AS (
    INSERT INTO tasklane.task_attempts
        (task_id, attempt, route, route_name, provider, model, worker_id, replica_id,
         started_at, finished_at, outcome, input_tokens, output_tokens, total_tokens, usage_units)
    SELECT id, attempts_before + attempt, route, NULL, NULL, NULL, worker_id, replica_id,
           coalesce(attempt_started_at, finished_at), finished_at, 'succeeded', NULL, NULL, NULL, NULL
    FROM done
    ON CONFLICT (task_id, attempt) DO NOTHING
), charge AS (
    INSERT INTO tasklane.budget_usage AS u (app, usage_subject, day, stripe, units)
    SELECT app, coalesce(usage_subject, ''), (now() AT TIME ZONE 'UTC')::date,
           floor(random() * 8)::smallint, sum(units)::int8
    FROM (SELECT app, usage_subject, NULL::int8 AS units FROM done) d
    WHERE units > 0
    GROUP BY app, coalesce(usage_subject, '')
    ORDER BY app, coalesce(usage_subject, '')
    ON CONFLICT (app, usage_subject, day, stripe) DO UPDATE SET units = u.units + excluded.units
)
SELECT count(*) FROM done;
