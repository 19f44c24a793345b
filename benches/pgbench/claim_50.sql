-- Raw baseline, fifty jobs per round: claim fifty in one statement, then complete all
-- fifty in one statement, each in its own transaction.
WITH picked AS (
    SELECT id FROM bare_jobs WHERE state = 'queued' ORDER BY id LIMIT 50 FOR UPDATE SKIP LOCKED
)
UPDATE bare_jobs j SET state = 'running', locked_by = :client_id FROM picked WHERE j.id = picked.id;
UPDATE bare_jobs SET state = 'done' WHERE state = 'running' AND locked_by = :client_id;
