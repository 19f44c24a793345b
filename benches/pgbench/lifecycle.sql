-- The raw-SQL lifecycle, one task a run of this script, each step its own statement and
-- transaction as an app's single requests are at a few hundred tasks a second:
--   psql -f benches/pgbench/lifecycle_setup.sql
--   pgbench -n -M prepared -f benches/pgbench/lifecycle.sql -R 250 -T 150 -c 8 -j 2
-- (prepared statements, as tasklane's; the variables are statement parameters).
-- and the server's CPU read from /proc (the postmaster and its children) around the run.
\set scope random(1, 100)
INSERT INTO life_jobs (app, scope_id, effect_key, task_type, input) VALUES ('bench', 'load-' || :scope, md5(random()::text), 'noop', '{}') ON CONFLICT DO NOTHING RETURNING id AS submitted \gset
UPDATE life_jobs SET state = 'running', lease_token = gen_random_uuid(), lease_expires_at = now() + interval '30 s', started_at = now() WHERE id = (SELECT id FROM life_jobs WHERE task_type = 'noop' AND state = 'queued' ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING id AS claimed, lease_token AS token \gset
BEGIN;
UPDATE life_jobs SET state = 'succeeded', result = '{}', finished_at = now(), lease_token = NULL WHERE id = :claimed AND lease_token = :token::uuid;
INSERT INTO life_outbox (job_id) VALUES (:claimed) RETURNING id AS delivery \gset
COMMIT;
UPDATE life_outbox SET status = 'delivered', delivered_at = now() WHERE id = :delivery AND status = 'pending';
UPDATE life_jobs SET released_at = coalesce(released_at, now()) WHERE id = :claimed;
DELETE FROM life_jobs WHERE id IN (SELECT id FROM life_jobs WHERE released_at < now() - interval '120 s' ORDER BY released_at LIMIT 2);
DELETE FROM life_outbox WHERE id IN (SELECT id FROM life_outbox WHERE status = 'delivered' AND delivered_at < now() - interval '120 s' ORDER BY delivered_at LIMIT 2);
