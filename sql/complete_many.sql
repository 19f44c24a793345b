-- The transition Succeed by lease, for a batch, made by tasklane.complete_tasks_claiming:
-- its generated definition, sql/functions/complete_tasks_claiming.sql, carries the
-- transition header and the lease fence.
-- Settles a batch of leased tasks as succeeded in one statement (group commit of
-- attempts that finished at about the same time), each fenced on its own lease token,
-- each with its own task.succeeded event and attempt row, and the budget charge of the
-- usage they reported. Same effect per task as complete.sql, except that the attempt's
-- deadline is not fenced: only in-process workers batch, and their own timer ends an
-- attempt at its deadline. The notifications it writes are claimed for this replica's
-- deliverer when $14 is a token (webhooks::handoff), except those of the endpoints $16
-- lists. It deletes the settled tasks' mirror rows itself and sets the transaction's
-- tasklane.queue_written, so the mirror's update trigger skips this statement.
-- $1 ids uuid[], $2 lease_tokens uuid[], $3 results jsonb[], $4 usage_units int8[],
-- $5 providers text[], $6 models text[], $7 routes text[], $8 route_names text[],
-- $9 input_tokens int8[], $10 output_tokens int8[], $11 total_tokens int8[],
-- $12 response_models text[] (the model the provider says answered),
-- $13 system_fingerprints text[]: parallel arrays, one element per task; all but the
-- first three may hold NULL elements.
-- $14 claim token (NULL: claim no notification), $15 claim seconds, $16 endpoints not
-- to claim for.
-- Returns (id, lease_token) of each settled task, delivery_id NULL; a pair missing from
-- the answer lost its lease or is gone. And (task id, delivery_id, endpoint_id,
-- created_at) of each notification claimed, lease_token NULL.
-- Locks: the settled task rows, visited in array order (callers sort by id, so two
-- batches never wait on each other in opposite orders); the budget_usage stripes
-- charged.
-- The statement lives in the function so it is planned once per connection
-- (plan_cache_mode = force_generic_plan): prepared here, PostgreSQL's own plan choice
-- would plan it again at many of its calls.
SELECT * FROM tasklane.complete_tasks_claiming($1::uuid[], $2::uuid[], $3::jsonb[], $4::int8[],
                                               $5::text[], $6::text[], $7::text[], $8::text[],
                                               $9::int8[], $10::int8[], $11::int8[],
                                               $12::text[], $13::text[],
                                               $14::uuid, $15::float8, $16::uuid[])
