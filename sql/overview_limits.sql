-- Every admission limit with its current use: capacity, slots held (retired included);
-- rate, admissions in the window; budget, units spent today (UTC).
-- No parameters. Locks: none.
SELECT l.id, l.kind, l.app, l.usage_subject, l.window_seconds, l.max,
       CASE l.kind
           WHEN 'capacity' THEN (SELECT count(*) FROM tasklane.capacity_slots c
                                 WHERE c.limit_id = l.id AND c.task_id IS NOT NULL)
           WHEN 'rate' THEN (SELECT count(*) FROM tasklane.rate_tokens r
                             WHERE r.limit_id = l.id
                               AND r.used_at > now() - l.window_seconds * interval '1 second')
           ELSE (SELECT coalesce(sum(u.units), 0) FROM tasklane.budget_usage u
                 WHERE u.app = l.app AND u.usage_subject = l.usage_subject
                   AND u.day = (now() AT TIME ZONE 'UTC')::date)
       END::bigint AS used
FROM tasklane.limits l
ORDER BY l.kind, l.app, l.usage_subject, l.window_seconds
