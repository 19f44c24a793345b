-- The cluster's health for the metrics sampler, one row: live replicas in the registry,
-- whether the global emergency stop is on, and how many apps have one of their own.
-- No parameters. Locks: none.
SELECT (SELECT count(*) FROM tasklane.replicas WHERE expires_at > now()) AS replicas,
       (SELECT count(*) FROM tasklane.emergency_stops WHERE app = '') AS global_stops,
       (SELECT count(*) FROM tasklane.emergency_stops WHERE app <> '') AS app_stops
