-- V45: whether a replica runs the worker role, so the replicas can count the ones whose
-- claim loops share the idle polls: with wake-ups on, an idle claim loop polls every
-- poll interval × that count, and the cluster as a whole polls about once per interval
-- whatever its size. Replicas of the build before register without it: they work, as
-- every replica did. Forward-only: never edit once landed.
ALTER TABLE tasklane.replicas ADD COLUMN works boolean NOT NULL DEFAULT true;
