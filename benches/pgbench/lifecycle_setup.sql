-- The raw-SQL lifecycle's tables: what PostgreSQL itself has to do for an app's task
-- taken one step at a time (submit, claim, complete with a notification row, delivery,
-- release, pruning), with no engine around it: no events, attempts, fair turns,
-- admission or tokens. Run before benches/pgbench/lifecycle.sql (see that file).
DROP TABLE IF EXISTS life_jobs, life_outbox;
CREATE TABLE life_jobs (
    id bigserial PRIMARY KEY,
    app text NOT NULL, scope_id text NOT NULL, effect_key text NOT NULL,
    task_type text NOT NULL, input jsonb NOT NULL, state text NOT NULL DEFAULT 'queued',
    lease_token uuid, lease_expires_at timestamptz, result jsonb,
    created_at timestamptz NOT NULL DEFAULT now(), started_at timestamptz,
    finished_at timestamptz, released_at timestamptz,
    UNIQUE (app, scope_id, effect_key)
) WITH (fillfactor = 50);
CREATE INDEX life_jobs_queued ON life_jobs (task_type, id) WHERE state = 'queued';
CREATE INDEX life_jobs_released ON life_jobs (released_at) WHERE released_at IS NOT NULL;
CREATE TABLE life_outbox (
    id bigserial PRIMARY KEY, job_id bigint NOT NULL, status text NOT NULL DEFAULT 'pending',
    created_at timestamptz NOT NULL DEFAULT now(), delivered_at timestamptz
);
CREATE INDEX life_outbox_pending ON life_outbox (id) WHERE status = 'pending';
CREATE INDEX life_outbox_delivered ON life_outbox (delivered_at) WHERE status = 'delivered';
