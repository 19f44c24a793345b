-- V42: whether a replica runs the maintenance role, so the others can count the
-- replicas that share the cluster-wide sweeps (rescue, deadlines, pruning, statistics,
-- vacuum, the floors while idle, the webhook outbox's poll) and each run them that many
-- times less often. Replicas of the build before register without it: they maintain,
-- as every replica did. Forward-only: never edit once landed.
ALTER TABLE tasklane.replicas ADD COLUMN maintains boolean NOT NULL DEFAULT true;
