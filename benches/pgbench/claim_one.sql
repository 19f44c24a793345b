-- Raw baseline, one job per round: claim one (SKIP LOCKED CTE), then complete it, each
-- in its own transaction, as a minimal worker would.
WITH picked AS (
    SELECT id FROM bare_jobs WHERE state = 'queued' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED
)
UPDATE bare_jobs j SET state = 'running', locked_by = :client_id FROM picked WHERE j.id = picked.id;
UPDATE bare_jobs SET state = 'done' WHERE state = 'running' AND locked_by = :client_id;
