-- Turns JIT compilation off for the rest of the activity read's transaction: the
-- minutes query's cost estimate (a full scan of tasks) passes jit_above_cost on any
-- sizable table, and compiling it took longer than running it (1.1 s of 1.5 s on a
-- 500,000-task table). No parameters. Locks: none.
SET LOCAL jit = off
