-- Refusals counted today (UTC) by code and app. No parameters. Locks: none.
SELECT code, app, sum(count)::bigint AS count
FROM tasklane.refusals
WHERE day = (now() AT TIME ZONE 'UTC')::date
GROUP BY code, app
ORDER BY code, app
