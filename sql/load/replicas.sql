-- How many replicas are registered (live or not yet swept): a fleet waits for its own
-- to appear. No parameters. Locks: none.
SELECT count(*) FROM tasklane.replicas
