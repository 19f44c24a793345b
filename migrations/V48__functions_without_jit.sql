-- V48: no just-in-time compilation in the functions that change planner settings.
-- A function that turns a plan type off (enable_seqscan, enable_bitmapscan) plans its
-- statements with that setting, and a statement that needs such a path all the same (a
-- scan of a set-returning function, of a table too small to have the index) is
-- estimated at the planner's cost of a disabled path, 10^10. Every plan above
-- jit_above_cost (100,000 by default) is compiled before it runs, and above 500,000
-- optimized and inlined too: 15-90 ms of CPU at each run, for statements that run in
-- well under a millisecond. The mirror's update trigger (tasklane.sync_task_queue,
-- which heartbeats, retries, fails, cancels and every claim that takes nothing go
-- through) planned its statements with sequential scans off since V47, so each of those
-- paid a compilation: one idle replica cost its PostgreSQL 0.077 core, where the same
-- replica with JIT off cost 0.010 (the deadline sweep, the claims' empty polls), and the
-- trigger of one empty claim took 93 ms on a new session's first call, 17 ms after.
-- The claim's functions (behind a pooler in transaction mode) turn bitmap scans off and
-- get the same; the claim pool's sessions on a direct connection set it too.
-- Forward-only: never edit once landed.

DO $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN
        SELECT p.oid::regprocedure
        FROM pg_proc p
        WHERE p.pronamespace = 'tasklane'::regnamespace
          AND EXISTS (SELECT 1 FROM unnest(p.proconfig) AS c(setting)
                      WHERE c.setting LIKE 'enable\_%=off')
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET jit = off', f);
    END LOOP;
END
$$;
