-- V21: a delivery's claim becomes a HOT update, and the outbox keeps one index fewer
-- (issue 14: with one endpoint subscribed, the drain must keep >= 80% of its rate).
-- Forward-only: never edit once landed.
--
-- Until now a notification cost about as much as its task: one insert with four index
-- entries, then a claim that moved next_attempt_at (an indexed column, so a new entry
-- in each of the five indexes) and a settle that changed status (named by three
-- partial indexes' predicates, so three more entries): eleven index entries and three
-- heap versions, none of them HOT.
--
-- * claimed_until: while an attempt is in flight, when its claim runs out and another
--   deliverer may take the row. No index names it, so a claim (attempts, claim_token,
--   claimed_until) is a HOT update. A row is due when next_attempt_at has come and it
--   is not claimed (claimed_until NULL or past). The due index still serves the claim:
--   the rows in flight are the few it steps over (at most the per-endpoint window of
--   each replica). Rows claimed before this migration keep their claim in
--   next_attempt_at, which still means "not before then".
-- * fillfactor 50 leaves each page room for the claim's new version beside the old.
-- * webhook_deliveries_finished goes: the pruner now reads each endpoint's log by
--   webhook_deliveries_log (an id is a UUIDv7 made when the row is written, before
--   it can finish, so every row finished before a cutoff has an id below the cutoff's).
--   The settle of a delivered row then adds two index entries, not three.
ALTER TABLE tasklane.webhook_deliveries ADD COLUMN claimed_until timestamptz;
ALTER TABLE tasklane.webhook_deliveries SET (fillfactor = 50);
DROP INDEX tasklane.webhook_deliveries_finished;
