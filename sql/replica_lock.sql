-- Serializes replica start-ups (the cold-start decision) for this transaction.
-- Locks: pg_advisory_xact_lock on a fixed key.
SELECT pg_advisory_xact_lock(8386110886357593701) -- "tasklane" in ASCII
