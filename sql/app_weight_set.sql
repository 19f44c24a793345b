-- Sets an app's weight in the claims' turns (an upsert); claims read it when a task
-- takes its turn, so it applies to tasks that become claimable after this commits.
-- $1 app, $2 weight (smallint, 1..100). Locks: the app's row of app_weights.
INSERT INTO tasklane.app_weights (app, weight)
VALUES ($1, $2)
ON CONFLICT (app) DO UPDATE SET weight = EXCLUDED.weight, updated_at = now()
