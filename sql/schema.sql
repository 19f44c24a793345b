-- GENERATED from the migrations by tests/schema/: do not edit. To change the
-- schema, add a migration, then run `TASKLANE_BLESS=1 cargo test --test it schema::`.
--
-- The current definition of every table and view in the tasklane schema, each
-- followed by its constraints, indexes and triggers: what migrations/ leave after
-- the last one ran (pg_dump --schema-only of PostgreSQL 15, normalised).
-- Functions, including the trigger functions, are in sql/functions/<name>.sql.
-- The line above each object names the migrations that wrote it; their comments
-- say why (pg_dump keeps only comments inside function bodies).

CREATE SCHEMA tasklane;


ALTER TABLE tasklane.tasks
    ADD CONSTRAINT tasks_traceparent_length CHECK ((length(traceparent) <= 128)) NOT VALID;


GRANT USAGE ON SCHEMA tasklane TO tasklane_app;


-- table tasks: migrations/V1__core.sql, migrations/V3__admission.sql, migrations/V7__task_traceparent.sql, migrations/V9__task_attempts.sql, migrations/V14__task_queue.sql, migrations/V17__lease_token_only_while_running.sql, migrations/V18__lease_token_validated.sql, migrations/V19__tasks_fillfactor_25.sql, migrations/V35__circuit_wait.sql
CREATE TABLE tasklane.tasks (
    id uuid NOT NULL,
    app text NOT NULL,
    scope_id text NOT NULL,
    effect_key text NOT NULL,
    usage_subject text,
    source_id text,
    task_type text NOT NULL,
    request_digest bytea NOT NULL,
    input jsonb NOT NULL,
    priority smallint DEFAULT 0 NOT NULL,
    state text DEFAULT 'queued'::text NOT NULL,
    attempt integer DEFAULT 0 NOT NULL,
    max_attempts integer NOT NULL,
    on_restart text NOT NULL,
    privacy text NOT NULL,
    lease_seconds integer NOT NULL,
    attempt_timeout_seconds integer NOT NULL,
    run_at timestamp with time zone DEFAULT now() NOT NULL,
    deadline_at timestamp with time zone,
    lease_token uuid,
    lease_expires_at timestamp with time zone,
    worker_id text,
    replica_id uuid,
    progress smallint,
    phase text,
    snapshot jsonb,
    result jsonb,
    error_code text,
    error_message text,
    usage_units bigint,
    provider text,
    model text,
    route text,
    event_seq integer DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone,
    released_at timestamp with time zone,
    resource text,
    resource_slot integer,
    holds_capacity boolean DEFAULT false NOT NULL,
    traceparent text,
    attempt_started_at timestamp with time zone,
    attempt_deadline_at timestamp with time zone,
    attempts_before integer DEFAULT 0 NOT NULL,
    circuit_wait_since timestamp with time zone,
    CONSTRAINT tasks_lease_only_while_running CHECK (((lease_token IS NULL) OR (state = ANY (ARRAY['running'::text, 'cancelling'::text])))),
    CONSTRAINT tasks_on_restart_check CHECK ((on_restart = ANY (ARRAY['fail'::text, 'retry'::text, 'resume'::text]))),
    CONSTRAINT tasks_privacy_check CHECK ((privacy = ANY (ARRAY['local_only'::text, 'external_allowed'::text]))),
    CONSTRAINT tasks_progress_check CHECK (((progress >= 0) AND (progress <= 100))),
    CONSTRAINT tasks_state_check CHECK ((state = ANY (ARRAY['queued'::text, 'running'::text, 'cancelling'::text, 'waiting_for_retry'::text, 'waiting_for_external_fallback'::text, 'succeeded'::text, 'failed'::text, 'cancelled'::text])))
)
WITH (fillfactor='25');

ALTER TABLE ONLY tasklane.tasks
    ADD CONSTRAINT tasks_identity UNIQUE NULLS NOT DISTINCT (app, scope_id, effect_key, usage_subject);

ALTER TABLE ONLY tasklane.tasks
    ADD CONSTRAINT tasks_pkey PRIMARY KEY (id);

-- index tasks_app_listing: migrations/V1__core.sql
CREATE INDEX tasks_app_listing ON tasklane.tasks USING btree (app, id DESC);

-- index tasks_released: migrations/V14__task_queue.sql
CREATE INDEX tasks_released ON tasklane.tasks USING btree (released_at) WHERE (released_at IS NOT NULL);

-- index tasks_scope_listing: migrations/V1__core.sql
CREATE INDEX tasks_scope_listing ON tasklane.tasks USING btree (app, scope_id, id DESC);

-- index tasks_unreleased: migrations/V4__lifecycle.rs
CREATE INDEX tasks_unreleased ON tasklane.tasks USING btree (app, scope_id COLLATE "C", COALESCE(source_id, ''::text) COLLATE "C") WHERE (released_at IS NULL);

-- trigger tasks_delete_attempts: migrations/V9__task_attempts.sql
CREATE TRIGGER tasks_delete_attempts AFTER DELETE ON tasklane.tasks REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION tasklane.delete_task_attempts();

-- trigger tasks_delete_deliveries: migrations/V11__webhooks.sql
CREATE TRIGGER tasks_delete_deliveries AFTER DELETE ON tasklane.tasks REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION tasklane.delete_task_deliveries();

-- trigger tasks_delete_events: migrations/V5__hot_paths.sql
CREATE TRIGGER tasks_delete_events AFTER DELETE ON tasklane.tasks REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION tasklane.delete_task_events();

-- trigger tasks_queue_delete: migrations/V14__task_queue.sql
CREATE TRIGGER tasks_queue_delete AFTER DELETE ON tasklane.tasks REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION tasklane.delete_task_queue();

-- trigger tasks_queue_insert: migrations/V14__task_queue.sql
CREATE TRIGGER tasks_queue_insert AFTER INSERT ON tasklane.tasks REFERENCING NEW TABLE AS fresh FOR EACH STATEMENT EXECUTE FUNCTION tasklane.insert_task_queue();

-- trigger tasks_queue_update: migrations/V14__task_queue.sql
CREATE TRIGGER tasks_queue_update AFTER UPDATE ON tasklane.tasks REFERENCING NEW TABLE AS fresh FOR EACH STATEMENT EXECUTE FUNCTION tasklane.sync_task_queue();

-- trigger tasks_record_usage: migrations/V3__admission.sql
CREATE TRIGGER tasks_record_usage AFTER UPDATE OF state ON tasklane.tasks FOR EACH ROW WHEN (((new.usage_units IS NOT NULL) AND (new.usage_units > 0) AND (new.state = ANY (ARRAY['succeeded'::text, 'failed'::text, 'cancelled'::text])) AND (old.state <> ALL (ARRAY['succeeded'::text, 'failed'::text, 'cancelled'::text])))) EXECUTE FUNCTION tasklane.record_usage();

-- trigger tasks_release_capacity: migrations/V3__admission.sql
CREATE TRIGGER tasks_release_capacity AFTER UPDATE OF state ON tasklane.tasks FOR EACH ROW WHEN ((old.holds_capacity AND (new.state = ANY (ARRAY['succeeded'::text, 'failed'::text, 'cancelled'::text])) AND (old.state <> ALL (ARRAY['succeeded'::text, 'failed'::text, 'cancelled'::text])))) EXECUTE FUNCTION tasklane.release_capacity();

-- trigger tasks_release_capacity_on_delete: migrations/V3__admission.sql
CREATE TRIGGER tasks_release_capacity_on_delete AFTER DELETE ON tasklane.tasks FOR EACH ROW WHEN ((old.holds_capacity AND (old.state <> ALL (ARRAY['succeeded'::text, 'failed'::text, 'cancelled'::text])))) EXECUTE FUNCTION tasklane.release_capacity();

-- trigger tasks_release_resource_slot: migrations/V3__admission.sql
CREATE TRIGGER tasks_release_resource_slot BEFORE UPDATE OF state ON tasklane.tasks FOR EACH ROW WHEN (((old.resource_slot IS NOT NULL) AND (new.state <> ALL (ARRAY['running'::text, 'cancelling'::text])))) EXECUTE FUNCTION tasklane.release_resource_slot();

-- trigger tasks_release_resource_slot_on_delete: migrations/V3__admission.sql
CREATE TRIGGER tasks_release_resource_slot_on_delete BEFORE DELETE ON tasklane.tasks FOR EACH ROW WHEN ((old.resource_slot IS NOT NULL)) EXECUTE FUNCTION tasklane.release_resource_slot();


-- view task_views: migrations/V1__core.sql
CREATE VIEW tasklane.task_views AS
 SELECT tasks.id,
    tasks.app,
    tasks.scope_id,
    tasks.source_id,
    tasks.usage_subject,
    tasks.task_type,
    tasks.state,
    tasks.priority,
    tasks.attempt,
    tasks.max_attempts,
    tasks.progress,
    tasks.phase,
    tasks.created_at,
    tasks.started_at,
    tasks.finished_at,
    tasks.released_at,
    tasks.deadline_at,
    tasks.result,
    tasks.error_code,
    tasks.error_message,
    tasks.usage_units,
    tasks.provider,
    tasks.model,
    tasks.route
   FROM tasklane.tasks;


-- table admission_history: migrations/V3__admission.sql
CREATE TABLE tasklane.admission_history (
    app text NOT NULL,
    usage_subject text NOT NULL,
    at timestamp with time zone NOT NULL,
    task_id uuid NOT NULL
);

-- index admission_history_at: migrations/V3__admission.sql
CREATE INDEX admission_history_at ON tasklane.admission_history USING brin (at);


-- table api_tokens: migrations/V2__tokens.sql
CREATE TABLE tasklane.api_tokens (
    id uuid NOT NULL,
    app text NOT NULL,
    scope_id text,
    permissions text[] NOT NULL,
    name text,
    token_hash bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone
);

ALTER TABLE ONLY tasklane.api_tokens
    ADD CONSTRAINT api_tokens_pkey PRIMARY KEY (id);

ALTER TABLE ONLY tasklane.api_tokens
    ADD CONSTRAINT api_tokens_token_hash_key UNIQUE (token_hash);


-- table app_weights: migrations/V38__fair_turns.sql
CREATE TABLE tasklane.app_weights (
    app text NOT NULL,
    weight smallint NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT app_weights_app_check CHECK ((app <> ''::text)),
    CONSTRAINT app_weights_weight_check CHECK (((weight >= 1) AND (weight <= 100)))
);

ALTER TABLE ONLY tasklane.app_weights
    ADD CONSTRAINT app_weights_pkey PRIMARY KEY (app);


-- table budget_reservations: migrations/V13__budget_reservations.sql
CREATE TABLE tasklane.budget_reservations (
    task_id uuid NOT NULL,
    attempt integer NOT NULL,
    app text NOT NULL,
    usage_subject text NOT NULL,
    units bigint NOT NULL,
    reserved_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT budget_reservations_units_check CHECK ((units >= 0))
);

ALTER TABLE ONLY tasklane.budget_reservations
    ADD CONSTRAINT budget_reservations_pkey PRIMARY KEY (task_id, attempt);

-- index budget_reservations_budget: migrations/V13__budget_reservations.sql
CREATE INDEX budget_reservations_budget ON tasklane.budget_reservations USING btree (app, usage_subject);


-- table budget_usage: migrations/V3__admission.sql
CREATE TABLE tasklane.budget_usage (
    app text NOT NULL,
    usage_subject text NOT NULL,
    day date NOT NULL,
    stripe smallint NOT NULL,
    units bigint NOT NULL
);

ALTER TABLE ONLY tasklane.budget_usage
    ADD CONSTRAINT budget_usage_pkey PRIMARY KEY (app, usage_subject, day, stripe);


-- table capacity_slots: migrations/V3__admission.sql
CREATE TABLE tasklane.capacity_slots (
    limit_id bigint NOT NULL,
    slot integer NOT NULL,
    task_id uuid,
    retired boolean DEFAULT false NOT NULL
);

ALTER TABLE ONLY tasklane.capacity_slots
    ADD CONSTRAINT capacity_slots_pkey PRIMARY KEY (limit_id, slot);

-- index capacity_slots_free: migrations/V3__admission.sql
CREATE INDEX capacity_slots_free ON tasklane.capacity_slots USING btree (limit_id, slot) WHERE (task_id IS NULL);

-- index capacity_slots_retired: migrations/V3__admission.sql
CREATE INDEX capacity_slots_retired ON tasklane.capacity_slots USING btree (limit_id) WHERE retired;

-- index capacity_slots_task: migrations/V3__admission.sql
CREATE INDEX capacity_slots_task ON tasklane.capacity_slots USING btree (task_id) WHERE (task_id IS NOT NULL);

ALTER TABLE ONLY tasklane.capacity_slots
    ADD CONSTRAINT capacity_slots_limit_id_fkey FOREIGN KEY (limit_id) REFERENCES tasklane.limits(id) ON DELETE CASCADE;


-- table circuits: migrations/V10__circuits.sql
CREATE TABLE tasklane.circuits (
    route_name text NOT NULL,
    consecutive_failures integer DEFAULT 0 NOT NULL,
    opened_at timestamp with time zone,
    retry_at timestamp with time zone,
    probe_until timestamp with time zone,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT circuits_check CHECK (((opened_at IS NULL) = (retry_at IS NULL))),
    CONSTRAINT circuits_check1 CHECK (((opened_at IS NOT NULL) OR (probe_until IS NULL))),
    CONSTRAINT circuits_consecutive_failures_check CHECK ((consecutive_failures >= 0)),
    CONSTRAINT circuits_route_name_check CHECK (((length(route_name) >= 1) AND (length(route_name) <= 200)))
);

ALTER TABLE ONLY tasklane.circuits
    ADD CONSTRAINT circuits_pkey PRIMARY KEY (route_name);


-- table emergency_stops: migrations/V3__admission.sql
CREATE TABLE tasklane.emergency_stops (
    app text NOT NULL,
    enabled_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY tasklane.emergency_stops
    ADD CONSTRAINT emergency_stops_pkey PRIMARY KEY (app);


-- table limits: migrations/V3__admission.sql
CREATE TABLE tasklane.limits (
    id bigint NOT NULL,
    kind text NOT NULL,
    app text DEFAULT ''::text NOT NULL,
    usage_subject text DEFAULT ''::text NOT NULL,
    window_seconds integer DEFAULT 0 NOT NULL,
    max bigint NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT limits_check CHECK (((usage_subject = ''::text) OR (app <> ''::text))),
    CONSTRAINT limits_check1 CHECK (((kind <> 'budget'::text) OR (app <> ''::text))),
    CONSTRAINT limits_check2 CHECK (((kind = 'rate'::text) = (window_seconds > 0))),
    CONSTRAINT limits_kind_check CHECK ((kind = ANY (ARRAY['capacity'::text, 'rate'::text, 'budget'::text]))),
    CONSTRAINT limits_max_check CHECK ((max >= 0)),
    CONSTRAINT limits_window_seconds_check CHECK (((window_seconds >= 0) AND (window_seconds <= 86400)))
);

ALTER TABLE tasklane.limits ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME tasklane.limits_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY tasklane.limits
    ADD CONSTRAINT limits_key UNIQUE (kind, app, usage_subject, window_seconds);

ALTER TABLE ONLY tasklane.limits
    ADD CONSTRAINT limits_pkey PRIMARY KEY (id);


-- table paused_task_types: migrations/V8__paused_task_types.sql
CREATE TABLE tasklane.paused_task_types (
    task_type text NOT NULL,
    paused_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT paused_task_types_task_type_check CHECK (((length(task_type) >= 1) AND (length(task_type) <= 200)))
);

ALTER TABLE ONLY tasklane.paused_task_types
    ADD CONSTRAINT paused_task_types_pkey PRIMARY KEY (task_type);


-- table rate_tokens: migrations/V3__admission.sql
CREATE TABLE tasklane.rate_tokens (
    limit_id bigint NOT NULL,
    token integer NOT NULL,
    used_at timestamp with time zone DEFAULT '-infinity'::timestamp with time zone NOT NULL,
    used_by uuid,
    prev_used_at timestamp with time zone
);

-- index rate_tokens_oldest: migrations/V3__admission.sql
CREATE INDEX rate_tokens_oldest ON tasklane.rate_tokens USING btree (limit_id, used_at);

ALTER TABLE ONLY tasklane.rate_tokens
    ADD CONSTRAINT rate_tokens_limit_id_fkey FOREIGN KEY (limit_id) REFERENCES tasklane.limits(id) ON DELETE CASCADE;


-- table refusals: migrations/V3__admission.sql
CREATE TABLE tasklane.refusals (
    day date NOT NULL,
    code text NOT NULL,
    app text NOT NULL,
    stripe smallint NOT NULL,
    count bigint NOT NULL
);

ALTER TABLE ONLY tasklane.refusals
    ADD CONSTRAINT refusals_pkey PRIMARY KEY (day, code, app, stripe);


-- table registered_task_types: migrations/V12__sql_run_task.sql
CREATE TABLE tasklane.registered_task_types (
    name text NOT NULL,
    max_attempts integer NOT NULL,
    on_restart text NOT NULL,
    privacy text NOT NULL,
    lease_seconds integer NOT NULL,
    attempt_timeout_seconds integer NOT NULL,
    deadline_seconds bigint,
    resource text,
    input_bytes bigint NOT NULL,
    registered_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY tasklane.registered_task_types
    ADD CONSTRAINT registered_task_types_pkey PRIMARY KEY (name);


-- table replicas: migrations/V1__core.sql, migrations/V42__replicas_maintain.sql, migrations/V45__replicas_work.sql
CREATE TABLE tasklane.replicas (
    id uuid NOT NULL,
    name text NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    heartbeat_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    maintains boolean DEFAULT true NOT NULL,
    works boolean DEFAULT true NOT NULL
);

ALTER TABLE ONLY tasklane.replicas
    ADD CONSTRAINT replicas_pkey PRIMARY KEY (id);


-- table resource_slots: migrations/V3__admission.sql
CREATE TABLE tasklane.resource_slots (
    resource text NOT NULL,
    slot integer NOT NULL,
    task_id uuid,
    retired boolean DEFAULT false NOT NULL
);

ALTER TABLE ONLY tasklane.resource_slots
    ADD CONSTRAINT resource_slots_pkey PRIMARY KEY (resource, slot);

-- index resource_slots_free: migrations/V3__admission.sql
CREATE INDEX resource_slots_free ON tasklane.resource_slots USING btree (resource, slot) WHERE (task_id IS NULL);

-- index resource_slots_retired: migrations/V3__admission.sql
CREATE INDEX resource_slots_retired ON tasklane.resource_slots USING btree (resource) WHERE retired;

-- index resource_slots_task: migrations/V3__admission.sql
CREATE INDEX resource_slots_task ON tasklane.resource_slots USING btree (task_id) WHERE (task_id IS NOT NULL);

ALTER TABLE ONLY tasklane.resource_slots
    ADD CONSTRAINT resource_slots_resource_fkey FOREIGN KEY (resource) REFERENCES tasklane.resources(name) ON DELETE CASCADE;


-- table resources: migrations/V3__admission.sql
CREATE TABLE tasklane.resources (
    name text NOT NULL,
    slots integer NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT resources_slots_check CHECK ((slots >= 0))
);

ALTER TABLE ONLY tasklane.resources
    ADD CONSTRAINT resources_pkey PRIMARY KEY (name);


-- table scope_fences: migrations/V4__lifecycle.rs
CREATE TABLE tasklane.scope_fences (
    app text NOT NULL,
    scope_id text NOT NULL,
    fenced_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY tasklane.scope_fences
    ADD CONSTRAINT scope_fences_pkey PRIMARY KEY (app, scope_id);


-- table task_attempts: migrations/V9__task_attempts.sql, migrations/V36__response_model.sql
CREATE TABLE tasklane.task_attempts (
    task_id uuid NOT NULL,
    attempt integer NOT NULL,
    route text,
    route_name text,
    provider text,
    model text,
    worker_id text,
    replica_id uuid,
    started_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone NOT NULL,
    outcome text NOT NULL,
    error_code text,
    error_message text,
    input_tokens bigint,
    output_tokens bigint,
    total_tokens bigint,
    usage_units bigint,
    response_model text,
    system_fingerprint text,
    CONSTRAINT task_attempts_outcome_check CHECK ((outcome = ANY (ARRAY['succeeded'::text, 'retry'::text, 'fallback'::text, 'failed'::text, 'cancelled'::text, 'lost'::text, 'timed_out'::text])))
);

ALTER TABLE ONLY tasklane.task_attempts
    ADD CONSTRAINT task_attempts_pkey PRIMARY KEY (task_id, attempt);


-- table task_events: migrations/V1__core.sql, migrations/V5__hot_paths.sql
CREATE TABLE tasklane.task_events (
    task_id uuid NOT NULL,
    seq integer NOT NULL,
    type text NOT NULL,
    data jsonb DEFAULT '{}'::jsonb NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY tasklane.task_events
    ADD CONSTRAINT task_events_pkey PRIMARY KEY (task_id, seq);

-- trigger task_events_notify: migrations/V2__tokens.sql, migrations/V5__hot_paths.sql, migrations/V28__events_notify_per_statement.sql
CREATE TRIGGER task_events_notify AFTER INSERT ON tasklane.task_events REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION tasklane.notify_task_events();


-- table task_output: migrations/V37__live_output.sql
CREATE UNLOGGED TABLE tasklane.task_output (
    task_id uuid NOT NULL,
    attempt integer NOT NULL,
    text text NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT task_output_attempt_check CHECK ((attempt >= 1))
);

ALTER TABLE ONLY tasklane.task_output
    ADD CONSTRAINT task_output_pkey PRIMARY KEY (task_id);


-- table task_queue: migrations/V14__task_queue.sql, migrations/V38__fair_turns.sql, migrations/V39__mirror_vacuum_truncate.sql, migrations/V40__claims_start_at_the_floor.sql
CREATE TABLE tasklane.task_queue (
    id uuid NOT NULL,
    state text NOT NULL,
    priority smallint NOT NULL,
    run_at timestamp with time zone NOT NULL,
    deadline_at timestamp with time zone,
    lease_expires_at timestamp with time zone,
    task_type text NOT NULL,
    app text NOT NULL,
    scope_id text NOT NULL,
    privacy text NOT NULL,
    resource text,
    subject text DEFAULT ''::text NOT NULL,
    turn double precision,
    behind boolean DEFAULT false NOT NULL,
    CONSTRAINT task_queue_claimable_has_turn CHECK (((turn IS NOT NULL) OR (state <> ALL (ARRAY['queued'::text, 'waiting_for_retry'::text, 'waiting_for_external_fallback'::text]))))
)
WITH (fillfactor='80', vacuum_truncate='false');

ALTER TABLE ONLY tasklane.task_queue
    ADD CONSTRAINT task_queue_pkey PRIMARY KEY (id);

-- index task_queue_behind: migrations/V40__claims_start_at_the_floor.sql
CREATE INDEX task_queue_behind ON tasklane.task_queue USING btree (task_type, priority DESC, turn, id) WHERE ((state = ANY (ARRAY['queued'::text, 'waiting_for_retry'::text])) AND behind);

-- index task_queue_claimable: migrations/V14__task_queue.sql, migrations/V23__claim_per_type.sql, migrations/V38__fair_turns.sql, migrations/V40__claims_start_at_the_floor.sql
CREATE INDEX task_queue_claimable ON tasklane.task_queue USING btree (task_type, priority DESC, turn, id) WHERE ((state = ANY (ARRAY['queued'::text, 'waiting_for_retry'::text])) AND (NOT behind));

-- index task_queue_deadline: migrations/V14__task_queue.sql
CREATE INDEX task_queue_deadline ON tasklane.task_queue USING btree (deadline_at) WHERE ((deadline_at IS NOT NULL) AND (state = ANY (ARRAY['queued'::text, 'waiting_for_retry'::text, 'waiting_for_external_fallback'::text])));

-- index task_queue_fallback: migrations/V14__task_queue.sql, migrations/V23__claim_per_type.sql, migrations/V38__fair_turns.sql
CREATE INDEX task_queue_fallback ON tasklane.task_queue USING btree (task_type, priority DESC, turn, id) WHERE (state = 'waiting_for_external_fallback'::text);

-- index task_queue_leased: migrations/V14__task_queue.sql
CREATE INDEX task_queue_leased ON tasklane.task_queue USING btree (lease_expires_at) WHERE (state = ANY (ARRAY['running'::text, 'cancelling'::text]));

-- index task_queue_resource: migrations/V14__task_queue.sql
CREATE INDEX task_queue_resource ON tasklane.task_queue USING btree (resource) WHERE ((resource IS NOT NULL) AND (state = ANY (ARRAY['queued'::text, 'waiting_for_retry'::text, 'waiting_for_external_fallback'::text])));

-- index task_queue_turns: migrations/V38__fair_turns.sql
CREATE INDEX task_queue_turns ON tasklane.task_queue USING btree (task_type, priority, app, subject, turn) WHERE (state = ANY (ARRAY['queued'::text, 'waiting_for_retry'::text, 'waiting_for_external_fallback'::text]));


-- table turn_floors: migrations/V40__claims_start_at_the_floor.sql, migrations/V56__floors_read_from_their_top.sql
CREATE TABLE tasklane.turn_floors (
    task_type text NOT NULL,
    priority smallint NOT NULL,
    floor double precision DEFAULT '-Infinity'::double precision NOT NULL
);

COMMENT ON TABLE tasklane.turn_floors IS 'Where the claims of each task type and priority start reading the claimable index: every
claimable mirror row below it is marked behind (task_queue_behind). One row for every task
type and priority that has had a claimable task (written by tasklane.hold_floors); raised
by the maintenance role to the turn point. Read from the top of turn_floors_top (ORDER BY
floor DESC LIMIT 1; a type''s priorities through tasklane.floors_of) and raised by the
row''s address, so no read visits the versions a held snapshot keeps; turn_floors_key
keeps one row a type and priority.';

-- index turn_floors_key: migrations/V56__floors_read_from_their_top.sql
CREATE UNIQUE INDEX turn_floors_key ON tasklane.turn_floors USING btree (((task_type || ''::text)), ((priority + 0)));

-- index turn_floors_top: migrations/V56__floors_read_from_their_top.sql
CREATE INDEX turn_floors_top ON tasklane.turn_floors USING btree (task_type, priority, floor);


-- table turn_points: migrations/V38__fair_turns.sql, migrations/V54__claims_point_read_from_its_top.sql
CREATE UNLOGGED TABLE tasklane.turn_points (
    task_type text NOT NULL,
    priority smallint NOT NULL,
    turn double precision NOT NULL
);

COMMENT ON TABLE tasklane.turn_points IS 'Where the claims have got: for each task type and priority, the highest turn a claim
took, raised by every claim (tasklane.raise_points). Read from the top of
turn_points_top (ORDER BY turn DESC LIMIT 1), which visits only the current version
however many raises a held snapshot keeps; a second row of a type and priority (two
claims that created it at once) is harmless, the higher one is the point. Unlogged:
after a crash it is empty and the claims make it again.';

-- index turn_points_top: migrations/V54__claims_point_read_from_its_top.sql
CREATE INDEX turn_points_top ON tasklane.turn_points USING btree (task_type, priority, turn);


-- table webhook_deliveries: migrations/V11__webhooks.sql, migrations/V15__webhook_outbox_cost.sql, migrations/V21__webhook_claim_hot.sql, migrations/V30__webhook_claim_by_primary_key.sql
CREATE TABLE tasklane.webhook_deliveries (
    id uuid DEFAULT tasklane.uuid_v7() NOT NULL,
    endpoint_id uuid NOT NULL,
    app text NOT NULL,
    scope_id text NOT NULL,
    task_id uuid NOT NULL,
    event text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone DEFAULT now() NOT NULL,
    claim_token uuid,
    last_status integer,
    last_error text,
    delivered_at timestamp with time zone,
    finished_at timestamp with time zone,
    claimed_until timestamp with time zone,
    CONSTRAINT webhook_deliveries_claim_only_while_pending CHECK (((claim_token IS NULL) OR (status = 'pending'::text))),
    CONSTRAINT webhook_deliveries_event_check CHECK ((event = ANY (ARRAY['task.succeeded'::text, 'task.failed'::text, 'task.cancelled'::text]))),
    CONSTRAINT webhook_deliveries_last_error_check CHECK ((length(last_error) <= 1024)),
    CONSTRAINT webhook_deliveries_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'delivered'::text, 'failed'::text])))
)
WITH (fillfactor='50');

ALTER TABLE ONLY tasklane.webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_pkey PRIMARY KEY (id);

-- index webhook_deliveries_due: migrations/V11__webhooks.sql
CREATE INDEX webhook_deliveries_due ON tasklane.webhook_deliveries USING btree (next_attempt_at) WHERE (status = 'pending'::text);

-- index webhook_deliveries_failed: migrations/V52__webhook_failed_index.sql
CREATE INDEX webhook_deliveries_failed ON tasklane.webhook_deliveries USING btree (endpoint_id) WHERE (status = 'failed'::text);

-- index webhook_deliveries_log: migrations/V11__webhooks.sql
CREATE INDEX webhook_deliveries_log ON tasklane.webhook_deliveries USING btree (endpoint_id, id DESC);

-- index webhook_deliveries_task: migrations/V11__webhooks.sql
CREATE INDEX webhook_deliveries_task ON tasklane.webhook_deliveries USING btree (task_id) WHERE (status <> 'delivered'::text);


-- table webhook_endpoints: migrations/V11__webhooks.sql
CREATE TABLE tasklane.webhook_endpoints (
    id uuid NOT NULL,
    app text NOT NULL,
    name text NOT NULL,
    url text NOT NULL,
    events text[] NOT NULL,
    disabled boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT webhook_endpoints_events_check CHECK (((cardinality(events) >= 1) AND (events <@ ARRAY['task.succeeded'::text, 'task.failed'::text, 'task.cancelled'::text]))),
    CONSTRAINT webhook_endpoints_name_check CHECK (((length(name) >= 1) AND (length(name) <= 100))),
    CONSTRAINT webhook_endpoints_url_check CHECK (((length(url) >= 1) AND (length(url) <= 2048)))
);

ALTER TABLE ONLY tasklane.webhook_endpoints
    ADD CONSTRAINT webhook_endpoints_name UNIQUE (app, name);

ALTER TABLE ONLY tasklane.webhook_endpoints
    ADD CONSTRAINT webhook_endpoints_pkey PRIMARY KEY (id);


-- table webhook_secrets: migrations/V11__webhooks.sql
CREATE TABLE tasklane.webhook_secrets (
    id bigint NOT NULL,
    endpoint_id uuid NOT NULL,
    secret text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone,
    CONSTRAINT webhook_secrets_secret_check CHECK (((secret ~~ 'whsec\_%'::text) AND (length(secret) <= 200)))
);

ALTER TABLE tasklane.webhook_secrets ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME tasklane.webhook_secrets_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY tasklane.webhook_secrets
    ADD CONSTRAINT webhook_secrets_pkey PRIMARY KEY (id);

-- index webhook_secrets_current: migrations/V11__webhooks.sql
CREATE UNIQUE INDEX webhook_secrets_current ON tasklane.webhook_secrets USING btree (endpoint_id) WHERE (expires_at IS NULL);

-- index webhook_secrets_endpoint: migrations/V11__webhooks.sql
CREATE INDEX webhook_secrets_endpoint ON tasklane.webhook_secrets USING btree (endpoint_id);

ALTER TABLE ONLY tasklane.webhook_secrets
    ADD CONSTRAINT webhook_secrets_endpoint_id_fkey FOREIGN KEY (endpoint_id) REFERENCES tasklane.webhook_endpoints(id) ON DELETE CASCADE;
