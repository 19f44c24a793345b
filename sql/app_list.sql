-- The apps an operator may weigh, by app: every app with an unrevoked API token or a
-- stored weight, with its weight (1 without a row) and when that was set (null: never).
-- An app that submits only through the SQL door shows once it has a weight.
-- No parameters. Locks: none.
SELECT apps.app, coalesce(w.weight, 1::smallint) AS weight, w.updated_at
FROM (
    SELECT app FROM tasklane.api_tokens WHERE revoked_at IS NULL
    UNION
    SELECT app FROM tasklane.app_weights
) AS apps
LEFT JOIN tasklane.app_weights AS w ON w.app = apps.app
ORDER BY apps.app
