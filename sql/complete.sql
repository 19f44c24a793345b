-- transition: Succeed
-- Settles a leased task as succeeded, fenced on its lease token and on the attempt's
-- deadline (past it the attempt is the deadline sweep's: a late completion is a lost
-- lease), with its event, its attempt row and the budget charge of the usage it
-- reported. A task being cancelled may still succeed: the work is done.
-- $1 id, $2 lease_token, $3 result jsonb, $4 usage_units, $5 provider, $6 model,
-- $7 route (the claim's wins: the server's record of the privacy boundary),
-- $8 route_name, $9 input_tokens, $10 output_tokens, $11 total_tokens, $12 response_model
-- (the model the provider says answered), $13 system_fingerprint (all but $1..$3
-- nullable). The attempt is charged $4 units when given, else $11 (one unit a token).
-- tasks.usage_units is left NULL: the trigger tasks_record_usage charges it only when
-- an older binary writes it.
-- Returns no row when the lease is lost or the task gone.
-- Locks: the task row; the budget_usage stripe it charges.
WITH done AS (
    UPDATE tasklane.tasks t
    SET state = 'succeeded', result = $3, provider = $5, model = $6,
        finished_at = now(), lease_token = NULL, lease_expires_at = NULL,
        error_code = NULL, error_message = NULL, snapshot = NULL,
        event_seq = t.event_seq + 1
    WHERE t.id = $1 AND t.lease_token = $2 AND t.state IN ('running', 'cancelling')
      AND (t.attempt_deadline_at IS NULL OR t.attempt_deadline_at > now())
    RETURNING t.id, t.event_seq, t.attempt, t.finished_at, t.app, t.usage_subject,
              t.attempts_before, t.route, t.worker_id, t.replica_id, t.attempt_started_at
), event AS (
    INSERT INTO tasklane.task_events (task_id, seq, type, data, at)
    SELECT id, event_seq, 'task.succeeded', jsonb_build_object('attempt', attempt), finished_at
    FROM done
), attempt AS (
    INSERT INTO tasklane.task_attempts
        (task_id, attempt, route, route_name, provider, model, worker_id, replica_id,
         started_at, finished_at, outcome, input_tokens, output_tokens, total_tokens,
         usage_units, response_model, system_fingerprint)
    SELECT id, attempts_before + attempt, coalesce(route, $7::text), $8::text, $5, $6,
           worker_id, replica_id, coalesce(attempt_started_at, finished_at), finished_at,
           'succeeded', $9::int8, $10::int8, $11::int8, coalesce($4, $11::int8),
           $12::text, $13::text
    FROM done
    ON CONFLICT (task_id, attempt) DO NOTHING
), charge AS (
    INSERT INTO tasklane.budget_usage AS u (app, usage_subject, day, stripe, units)
    SELECT app, coalesce(usage_subject, ''), (finished_at AT TIME ZONE 'UTC')::date,
           floor(random() * 8)::smallint, coalesce($4, $11::int8)
    FROM done
    WHERE coalesce($4, $11::int8) > 0
    ON CONFLICT (app, usage_subject, day, stripe) DO UPDATE SET units = u.units + excluded.units
)
SELECT id FROM done
