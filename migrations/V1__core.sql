-- Core schema: tasks, their events, and the replica registry.
-- Forward-only: never edit once landed; add a new V<n> file instead.

CREATE SCHEMA IF NOT EXISTS tasklane;

CREATE TABLE tasklane.tasks (
    id               uuid PRIMARY KEY,
    app              text NOT NULL,
    scope_id         text NOT NULL,
    effect_key       text NOT NULL,
    usage_subject    text,
    source_id        text,
    task_type        text NOT NULL,
    request_digest   bytea NOT NULL,
    input            jsonb NOT NULL,
    priority         smallint NOT NULL DEFAULT 0,
    state            text NOT NULL DEFAULT 'queued' CHECK (state IN (
                         'queued', 'running', 'cancelling', 'waiting_for_retry',
                         'waiting_for_external_fallback', 'succeeded', 'failed', 'cancelled')),
    attempt          integer NOT NULL DEFAULT 0,
    max_attempts     integer NOT NULL,
    on_restart       text NOT NULL CHECK (on_restart IN ('fail', 'retry', 'resume')),
    privacy          text NOT NULL CHECK (privacy IN ('local_only', 'external_allowed')),
    lease_seconds    integer NOT NULL,
    attempt_timeout_seconds integer NOT NULL,
    run_at           timestamptz NOT NULL DEFAULT now(),
    deadline_at      timestamptz,
    -- The lease of the current claim: the token fences every later write of the worker.
    lease_token      uuid,
    lease_expires_at timestamptz,
    worker_id        text,
    -- The replica process whose in-process worker holds the lease (NULL for remote workers),
    -- so a cold start recovers only what died with the replicas.
    replica_id       uuid,
    progress         smallint CHECK (progress BETWEEN 0 AND 100),
    phase            text,
    snapshot         jsonb,
    result           jsonb,
    error_code       text,
    error_message    text,
    usage_units      bigint,
    provider         text,
    model            text,
    route            text,
    -- seq of the last event written; the next transition writes event_seq + 1.
    event_seq        integer NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz,
    released_at      timestamptz,
    CONSTRAINT tasks_identity UNIQUE NULLS NOT DISTINCT (app, scope_id, effect_key, usage_subject)
);

-- Claimable rows only, in claim order: stays small however many finished rows there are.
CREATE INDEX tasks_claimable ON tasklane.tasks (priority DESC, run_at, id)
    WHERE state IN ('queued', 'waiting_for_retry');
CREATE INDEX tasks_fallback ON tasklane.tasks (priority DESC, run_at, id)
    WHERE state = 'waiting_for_external_fallback';
-- The rescuer's scan for expired leases.
CREATE INDEX tasks_leased ON tasklane.tasks (lease_expires_at)
    WHERE state IN ('running', 'cancelling');
-- The queue-deadline sweeper's scan.
CREATE INDEX tasks_deadline ON tasklane.tasks (deadline_at)
    WHERE deadline_at IS NOT NULL
      AND state IN ('queued', 'waiting_for_retry', 'waiting_for_external_fallback');
-- Listing an app's tasks newest first (keyset on id, which is a UUIDv7).
CREATE INDEX tasks_app_listing ON tasklane.tasks (app, id DESC);
CREATE INDEX tasks_scope_listing ON tasklane.tasks (app, scope_id, id DESC);

CREATE TABLE tasklane.task_events (
    task_id uuid NOT NULL REFERENCES tasklane.tasks (id) ON DELETE CASCADE,
    seq     integer NOT NULL,
    type    text NOT NULL,
    data    jsonb NOT NULL DEFAULT '{}',
    at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (task_id, seq)
);

CREATE TABLE tasklane.replicas (
    id           uuid PRIMARY KEY,
    name         text NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);

-- The 64-bit advisory-lock key of an owner (app, scope). Admission takes it shared,
-- deletion exclusively; SQL and Rust callers must agree, so it lives here.
CREATE FUNCTION tasklane.owner_key(p_app text, p_scope text) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT ('x' || substr(encode(sha256(convert_to(p_app || chr(31) || p_scope, 'UTF8')), 'hex'), 1, 16))::bit(64)::bigint
$$;

-- What the API shows of a task: everything but input, lease, digest, effect key and
-- snapshot. One place for the column list that reads and listings share.
CREATE VIEW tasklane.task_views AS
SELECT id, app, scope_id, source_id, usage_subject, task_type, state, priority, attempt,
       max_attempts, progress, phase, created_at, started_at, finished_at, released_at,
       deadline_at, result, error_code, error_message, usage_units, provider, model, route
FROM tasklane.tasks;
