-- Sets the statistics target of the ANALYZEs that follow in this transaction (the
-- keeper's small sample for young tables; see src/store/statistics.rs).
-- $1 the target, as text. Locks: none.
SELECT set_config('default_statistics_target', $1, true)
