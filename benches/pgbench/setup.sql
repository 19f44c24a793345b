-- The bare queue of the raw-SQL baseline: no events, no leases, no tasklane schema;
-- the least PostgreSQL itself has to do per job. :rows is set by the bench.
DROP TABLE IF EXISTS bare_jobs;
CREATE TABLE bare_jobs (
    id        bigserial PRIMARY KEY,
    state     text NOT NULL DEFAULT 'queued',
    locked_by integer,
    payload   jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX bare_jobs_queued ON bare_jobs (id) WHERE state = 'queued';
CREATE INDEX bare_jobs_running ON bare_jobs (locked_by) WHERE state = 'running';
