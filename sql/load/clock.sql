-- The database's clock now (not the transaction's start): where a drain's time starts.
-- No parameters. Locks: none.
SELECT clock_timestamp()
