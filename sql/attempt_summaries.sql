-- What the task view shows of its attempts, for a page of tasks: the usage summed over
-- every attempt (NULL when none reported any) and the provenance of the last attempt
-- that recorded one (else of the last attempt, whose route the claim recorded).
-- $1 task ids uuid[]. Locks: none.
SELECT a.task_id,
       sum(a.input_tokens)::int8 AS input_tokens,
       sum(a.output_tokens)::int8 AS output_tokens,
       sum(a.total_tokens)::int8 AS total_tokens,
       sum(a.usage_units)::int8 AS usage_units,
       (array_agg(a.provider ORDER BY a.provider IS NULL AND a.route_name IS NULL, a.attempt DESC))[1] AS provider,
       (array_agg(a.model ORDER BY a.provider IS NULL AND a.route_name IS NULL, a.attempt DESC))[1] AS model,
       (array_agg(a.route ORDER BY a.provider IS NULL AND a.route_name IS NULL, a.attempt DESC))[1] AS route,
       (array_agg(a.route_name ORDER BY a.provider IS NULL AND a.route_name IS NULL, a.attempt DESC))[1] AS route_name,
       (array_agg(a.response_model ORDER BY a.provider IS NULL AND a.route_name IS NULL, a.attempt DESC))[1] AS response_model,
       (array_agg(a.system_fingerprint ORDER BY a.provider IS NULL AND a.route_name IS NULL, a.attempt DESC))[1] AS system_fingerprint
FROM tasklane.task_attempts a
WHERE a.task_id = ANY($1::uuid[])
GROUP BY a.task_id
