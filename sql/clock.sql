-- The database's clock: the time the current transaction started (now()), which a
-- sweep keeps as where its next pass may start reading.
SELECT now() AS now
