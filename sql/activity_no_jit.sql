-- Turns JIT compilation off for the rest of the activity read's transaction: the
-- minutes query's cost estimate (a full scan of tasks) passes jit_above_cost on any
-- sizable table, and on a large one compiling it takes longer than running it.
-- No parameters. Locks: none.
SET LOCAL jit = off
