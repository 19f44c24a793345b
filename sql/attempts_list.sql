-- The attempts of one task, oldest first: the rows of ended attempts, then the running
-- attempt of a leased task read from the task row (its row is written when it ends).
-- The caller has checked the task is the owner's. $1 task id.
-- Locks: none.
SELECT a.attempt, a.route, a.route_name, a.provider, a.model, a.started_at, a.finished_at,
       a.outcome, a.error_code, a.error_message, a.input_tokens, a.output_tokens,
       a.total_tokens, a.response_model, a.system_fingerprint
FROM tasklane.task_attempts a
WHERE a.task_id = $1
UNION ALL
SELECT t.attempts_before + t.attempt, t.route, NULL, NULL, NULL,
       coalesce(t.attempt_started_at, t.started_at), NULL, 'running', NULL, NULL,
       NULL, NULL, NULL, NULL, NULL
FROM tasklane.tasks t
WHERE t.id = $1 AND t.state IN ('running', 'cancelling')
ORDER BY 1
