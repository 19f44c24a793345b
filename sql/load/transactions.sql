-- Transactions committed and rolled back in this database so far (pg_stat_database;
-- other backends' counts arrive within about a second). Every statement the engine
-- runs outside an explicit transaction is one. No parameters. Locks: none.
SELECT (xact_commit + xact_rollback)::int8 FROM pg_stat_database WHERE datname = current_database()
