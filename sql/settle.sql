-- transition: RetryLater, Fail, Fallback, AckCancel
--   except queued, waiting_for_retry, waiting_for_external_fallback
--   (ends an attempt: only a leased task has one, task::settlement refuses the rest)
-- Moves a leased task (locked by lease_lock.sql in this transaction) to the state
-- decided by task::settlement, ending its lease, with its event, the attempt's row and the
-- budget charge of the usage the attempt reported (failed attempts pay too).
-- $1 id, $2 lease_token, $3 new state, $4 error_code (nullable), $5 error_message
-- (nullable), $6 retry delay in ms (nullable: claimable now), $7 the attempt's outcome
-- (task::outcome::Outcome), $8 route (the claim's wins), $9 route_name, $10 provider,
-- $11 model, $12 input_tokens, $13 output_tokens, $14 total_tokens, $15 usage_units
-- (all nullable), $16 the attempt's own error code where it is not the task's (a last
-- attempt that timed out fails the task as attempts_exhausted; its row says
-- attempt_timeout), else NULL. The attempt is charged $15 units when given, else $14.
-- $17 deferred: the attempt made no call because every route it may use has its circuit
-- open; it does not count (attempt goes back by one, no attempt row), its event says
-- `deferred`, and the task's circuit wait starts now unless it already runs.
-- $18 response_model (the model the provider says answered), $19 system_fingerprint
-- (both nullable).
-- Locks: the task row (already held); the budget_usage stripe it charges.
WITH moved AS (
    UPDATE tasklane.tasks t
    SET state = $3, error_code = $4, error_message = $5,
        run_at = now() + coalesce($6::bigint, 0) * interval '1 millisecond',
        finished_at = CASE WHEN $3 IN ('succeeded', 'failed', 'cancelled') THEN now() END,
        lease_token = NULL, lease_expires_at = NULL, snapshot = NULL,
        event_seq = t.event_seq + 1,
        attempt = t.attempt - CASE WHEN $17::bool THEN 1 ELSE 0 END,
        circuit_wait_since = CASE WHEN $17::bool THEN coalesce(t.circuit_wait_since, now()) END
    WHERE t.id = $1 AND t.lease_token = $2 AND t.state IN ('running', 'cancelling')
    RETURNING t.id, t.event_seq, t.state, t.attempt, t.error_code, t.error_message, t.app,
              t.usage_subject, t.attempts_before, t.route, t.worker_id, t.replica_id,
              t.attempt_started_at
), event AS (
    INSERT INTO tasklane.task_events (task_id, seq, type, data)
    SELECT id, event_seq, 'task.' || state,
           jsonb_strip_nulls(jsonb_build_object('attempt', attempt, 'code', error_code,
                                                'deferred', CASE WHEN $17::bool THEN true END))
    FROM moved
), attempt AS (
    INSERT INTO tasklane.task_attempts
        (task_id, attempt, route, route_name, provider, model, worker_id, replica_id,
         started_at, finished_at, outcome, error_code, error_message, input_tokens,
         output_tokens, total_tokens, usage_units, response_model, system_fingerprint)
    SELECT id, attempts_before + attempt, coalesce(route, $8::text), $9::text, $10::text,
           $11::text, worker_id, replica_id, coalesce(attempt_started_at, now()), now(),
           $7::text, coalesce($16::text, error_code), error_message, $12::int8, $13::int8,
           $14::int8,
           coalesce($15::int8, $14::int8), $18::text, $19::text
    FROM moved
    WHERE NOT $17::bool
    ON CONFLICT (task_id, attempt) DO NOTHING
), charge AS (
    INSERT INTO tasklane.budget_usage AS u (app, usage_subject, day, stripe, units)
    SELECT app, coalesce(usage_subject, ''), (now() AT TIME ZONE 'UTC')::date,
           floor(random() * 8)::smallint, coalesce($15::int8, $14::int8)
    FROM moved
    WHERE coalesce($15::int8, $14::int8) > 0
    ON CONFLICT (app, usage_subject, day, stripe) DO UPDATE SET units = u.units + excluded.units
)
SELECT state FROM moved
