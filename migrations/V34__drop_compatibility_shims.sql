-- Drops the compatibility shims that only binaries older than the previous release
-- call. A release supports replicas of the previous release during a rolling upgrade:
-- the schema it migrates to still runs every statement the previous release's binary
-- sends, and SQL kept only for older binaries goes in the first release after that, in
-- a migration of its own.
--
-- The previous release (commit e89d51a) sends only the statements in its sql/*.sql
-- (and the claim variants rendered from sql/claim.sql), and none of them calls these:
--
-- * tasklane.complete_tasks(uuid[], ..., bigint[]): the batch Succeed by lease without
--   the webhook claim. Its sql/complete_many.sql calls tasklane.complete_tasks_claiming
--   (V31); the only callers left were benchmarks, now moved to complete_tasks_claiming.
-- * tasklane.submit_tasks without item positions (V16's overload, 18 arrays). Its
--   sql/submit_batch.sql calls the overload whose first argument numbers the items
--   (V24, which announced this drop).
-- * tasklane.submit_task with 17 arguments, the wrapper forwarding to the 18-argument
--   one with a NULL traceparent (V7). Its sql/submit.sql sends 18 arguments.
--
-- Safe during a rolling upgrade from that release: tests/it/compatibility.rs runs the
-- previous release's statements (tests/fixtures/previous_release/) against this schema
-- and checks these three are gone. No remaining function calls them: tasklane.run_task
-- and tasklane.submit_tasks call the 18-argument submit_task, and nothing calls the
-- other two.

DROP FUNCTION tasklane.complete_tasks(uuid[], uuid[], jsonb[], bigint[], text[], text[],
                                      text[], text[], bigint[], bigint[], bigint[]);

DROP FUNCTION tasklane.submit_tasks(uuid[], text[], text[], text[], text[], text[], text[],
                                    bytea[], jsonb[], smallint[], integer[], text[], text[],
                                    integer[], integer[], bigint[], text[], text[]);

DROP FUNCTION tasklane.submit_task(uuid, text, text, text, text, text, text, bytea, jsonb,
                                   smallint, integer, text, text, integer, integer, bigint,
                                   text);
