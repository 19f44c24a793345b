-- What-if (not shipped): the narrow queue tables that would let claim and settle update
-- the wide tasks row as HOT updates. No index of tasks may name a column that claim or
-- settle changes (state, run_at, lease_expires_at, finished_at), so the claimable order
-- moves to tasklane.ready (one row per waiting task) and the set of leased tasks to
-- tasklane.leases (for the rescuer's scan); the prune index keys on released_at alone;
-- fillfactor leaves room on each page for the new row versions. Applied on top of the
-- current schema. Measured in benches/RESULTS.md ("What-if: a narrow queue"); run.sh runs it.
DROP INDEX tasklane.tasks_claimable, tasklane.tasks_fallback, tasklane.tasks_leased, tasklane.tasks_deadline, tasklane.tasks_claimable_resource, tasklane.tasks_prunable;
CREATE INDEX tasks_released ON tasklane.tasks (released_at) WHERE released_at IS NOT NULL;
ALTER TABLE tasklane.tasks SET (fillfactor = 70);
CREATE TABLE tasklane.ready (
  task_id uuid PRIMARY KEY,
  state text NOT NULL,
  priority smallint NOT NULL,
  run_at timestamptz NOT NULL,
  task_type text NOT NULL,
  app text NOT NULL,
  scope_id text NOT NULL,
  privacy text NOT NULL,
  resource text,
  deadline_at timestamptz
);
CREATE INDEX ready_claimable ON tasklane.ready (priority DESC, run_at, task_id) WHERE state IN ('queued','waiting_for_retry');
CREATE INDEX ready_fallback ON tasklane.ready (priority DESC, run_at, task_id) WHERE state = 'waiting_for_external_fallback';
CREATE INDEX ready_deadline ON tasklane.ready (deadline_at) WHERE deadline_at IS NOT NULL;
CREATE INDEX ready_resource ON tasklane.ready (resource) WHERE resource IS NOT NULL;
CREATE TABLE tasklane.leases (task_id uuid PRIMARY KEY);
