-- V23: the queue's claim indexes lead with the task type, so a claim scans each type it
-- serves in claim order instead of one scan over every type (issue 15's finding: 40
-- batches of 1,000 `remote` tasks, which no replica of the bench runs, cost the
-- replica's own claim loops 4.1 s more than the batches themselves, 96 claims that found
-- nothing at 43 ms each: the scan in priority order walked the whole backlog of a type
-- the claimer does not run before it could stop). sql/claim.sql reads one ordered range
-- of these indexes per served type and merges them.
-- Forward-only: never edit once landed.
--
-- Same names, same predicates, so the other readers of the claimable rows (the admin
-- overview's queue, the Helm chart's KEDA count) keep reading them: a count filtered by
-- state alone reads the whole partial index as before. An older binary beside this one
-- (a rolling upgrade) claims with one scan in priority order, which these indexes no
-- longer give it: its claims sort their candidates, correct but slower, until it is
-- gone. The mirror holds live tasks only, so rebuilding both indexes is quick; it
-- blocks writes to task_queue (submits, claims) while it runs.

DROP INDEX tasklane.task_queue_claimable;
CREATE INDEX task_queue_claimable ON tasklane.task_queue (task_type, priority DESC, run_at, id)
WHERE state IN ('queued', 'waiting_for_retry');

DROP INDEX tasklane.task_queue_fallback;
CREATE INDEX task_queue_fallback ON tasklane.task_queue (task_type, priority DESC, run_at, id)
WHERE state = 'waiting_for_external_fallback';
