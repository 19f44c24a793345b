-- Emergency stops in force ('' = global). No parameters. Locks: none.
SELECT app, enabled_at FROM tasklane.emergency_stops ORDER BY app
