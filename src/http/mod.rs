//! The HTTP API (docs/api.md): one handler per operation (`api`, a file per group) with
//! bearer-token auth, problem+json errors mapped in one place (`error`), DTOs that cannot
//! leak internals (`dto`), event streams and `?wait=` fed by one shared LISTEN and one
//! shared poll per replica (`watch`), OpenTelemetry metrics, and an OpenAPI 3.1 document
//! generated from the handlers themselves (so it cannot drift from the paths they
//! serve). Every query is filtered by the caller's app and scope.
//!
//! Shutdown is ordered: readiness turns 503, long polls and streams end, in-flight
//! requests finish within the grace period, then the caller stops the replica.

pub mod api;
pub mod auth;
pub mod console;
pub mod dto;
pub mod error;
pub mod extract;
pub mod metrics;
pub mod openapi;
pub mod output_watch;
pub mod starting;
pub mod watch;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use axum::{Json, Router};
use tokio_util::sync::CancellationToken;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::service::Tasklane;
use api::{
    activity, admin, attempts, events, lifecycle, ops, output, tasks, webhooks, whoami, worker,
    worker_batch,
};

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub tasklane: Tasklane,
    pub watch: watch::TaskWatch,
    pub metrics: metrics::Metrics,
    /// What `/metrics` renders: every instrument of the process.
    pub telemetry: crate::telemetry::Telemetry,
    /// False from the start of a shutdown: `/readyz` answers 503.
    pub ready: Arc<AtomicBool>,
    /// Cancelled at shutdown: long polls, waits and streams end.
    pub stopping: CancellationToken,
    /// The longest a long poll is held (`--max-wait-seconds`).
    pub max_wait: Duration,
}

impl AppState {
    /// A ready state serving `tasklane` as `config` bounds it (the longest long poll),
    /// rendering `telemetry` at `/metrics`. What `?wait=`, streams and claim long polls
    /// learn from other replicas needs [`AppState::spawn_sources`] too; public so tests
    /// can serve [`router`] in-process, without a listener.
    pub fn new(
        config: &HttpConfig,
        tasklane: Tasklane,
        telemetry: crate::telemetry::Telemetry,
    ) -> Self {
        AppState {
            tasklane,
            watch: watch::TaskWatch::default(),
            metrics: metrics::Metrics::new(&telemetry.meter()),
            telemetry,
            ready: Arc::new(AtomicBool::new(true)),
            stopping: CancellationToken::new(),
            max_wait: config.max_wait,
        }
    }

    /// When a long poll asking to wait `wait` answers with what there is: `wait` from
    /// now, at most this replica's `--max-wait-seconds`. Every long poll's one bound.
    pub fn long_poll_deadline(&self, wait: Duration) -> tokio::time::Instant {
        tokio::time::Instant::now() + wait.min(self.max_wait)
    }

    /// The API's shared sources, running until `stop`: task events for waiters and
    /// streams (the events LISTEN plus a shared poll), and work wake-ups for claim long
    /// polls when no in-process worker listens already.
    pub fn spawn_sources(&self, config: &HttpConfig, stop: CancellationToken) {
        if let Some(url) = &config.listen_url {
            tokio::spawn(self.watch.clone().run(url.clone(), stop.clone()));
        }
        tokio::spawn(
            self.watch
                .clone()
                .run_poller(self.tasklane.clone(), stop.clone()),
        );
        if let (true, Some(url)) = (config.listen_wakeups, &config.listen_url) {
            let wakeup = self.tasklane.wakeup().clone();
            tokio::spawn(wakeup.run_listener(url.clone(), stop));
        }
    }
}

#[derive(OpenApi)]
#[openapi(
    info(title = "tasklane", description = "A durable task platform on PostgreSQL (reference: docs/api.md)."),
    modifiers(&BearerAuth),
    components(schemas(error::Problem))
)]
struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let scheme = HttpBuilder::new()
            .scheme(HttpAuthScheme::Bearer)
            .bearer_format("tl_...")
            .build();
        components.add_security_scheme("bearer", SecurityScheme::Http(scheme));
    }
}

/// How many times a single request's body limit a batch submit may carry (its 1,000
/// items each have the single submit's input bound).
pub const BATCH_BODY_FACTOR: usize = 16;

/// The routes and the OpenAPI document of the whole API (the batch route's included).
pub fn api() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    let (routes, mut doc) = single_api();
    doc.merge(batch_api().1);
    (routes, doc)
}

/// The batch submit route, apart: its body limit is larger.
fn batch_api() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    OpenApiRouter::new()
        .routes(routes!(api::batch::submit_batch))
        .split_for_parts()
}

/// Every route but the batch submit.
fn single_api() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(tasks::submit, tasks::list_tasks))
        .routes(routes!(tasks::get_task))
        .routes(routes!(attempts::task_attempts))
        .routes(routes!(tasks::cancel_task))
        .routes(routes!(tasks::retry_task))
        .routes(routes!(events::task_events))
        .routes(routes!(output::task_output))
        .routes(routes!(lifecycle::release))
        .routes(routes!(lifecycle::delete_tasks))
        .routes(routes!(lifecycle::lift_fence))
        .routes(routes!(lifecycle::unreleased_sources))
        .routes(routes!(admin::set_limit))
        .routes(routes!(admin::set_emergency_stop))
        .routes(routes!(admin::set_resource))
        .routes(routes!(admin::overview))
        .routes(routes!(admin::pause_task_type))
        .routes(routes!(admin::set_app_weight))
        .routes(routes!(admin::list_apps))
        .routes(routes!(admin::list_circuits))
        .routes(routes!(admin::reset_circuit))
        .routes(routes!(activity::activity))
        .routes(routes!(whoami::whoami))
        .routes(routes!(webhooks::list_webhooks))
        .routes(routes!(webhooks::put_webhook, webhooks::delete_webhook))
        .routes(routes!(webhooks::rotate_secret))
        .routes(routes!(webhooks::deliveries))
        .routes(routes!(webhooks::redeliver))
        .routes(routes!(worker::claim_tasks))
        .routes(routes!(worker::heartbeat))
        .routes(routes!(worker::complete))
        .routes(routes!(worker::fail))
        .routes(routes!(worker::fallback))
        .routes(routes!(worker::cancelled))
        .routes(routes!(worker_batch::heartbeats))
        .routes(routes!(worker_batch::complete_many))
        .routes(routes!(worker_batch::write_output))
        .routes(routes!(worker_batch::write_outputs))
        .routes(routes!(ops::healthz))
        .routes(routes!(ops::readyz))
        .routes(routes!(ops::metrics))
        .split_for_parts()
}

/// The OpenAPI document of the whole API, finished (see [`openapi::finish`]); what
/// `/openapi.json` serves, without a replica's task-type names.
pub fn document() -> serde_json::Value {
    openapi::finish(&api().1)
}

/// The OpenAPI document as pretty JSON (`tasklane openapi`).
pub fn openapi_json() -> String {
    serde_json::to_string_pretty(&document()).unwrap_or_default()
}

/// The whole application: routes, `/openapi.json`, the web console at `/ui`, metrics,
/// and a body limit on every
/// route (413 before any handler reads a byte too many): `body_limit`, and
/// [`BATCH_BODY_FACTOR`] times that for the batch submit.
pub fn router(state: AppState, body_limit: usize) -> Router {
    let (routes, mut openapi) = single_api();
    let (batch, batch_doc) = batch_api();
    openapi.merge(batch_doc);
    let openapi = Arc::new(with_task_types(
        openapi::finish(&openapi),
        &state.tasklane.task_types().names(),
    ));
    let routes = routes.route(
        "/openapi.json",
        get(move || async move { Json(openapi.as_ref().clone()) }),
    );
    let routes = limited(routes, body_limit)
        .merge(limited(batch, body_limit.saturating_mul(BATCH_BODY_FACTOR)))
        .merge(limited(console::routes(), 0));
    finish(routes, state)
}

/// `routes` with a body limit of `limit` bytes, whether or not a handler reads it; a 413
/// from either layer or from an extractor states `limit` in its detail.
fn limited(routes: Router<AppState>, limit: usize) -> Router<AppState> {
    routes
        .layer(DefaultBodyLimit::max(limit))
        .layer(tower_http::limit::RequestBodyLimitLayer::new(limit))
        .layer(axum::middleware::map_response(
            move |response: axum::response::Response| {
                std::future::ready(match response.status() {
                    axum::http::StatusCode::PAYLOAD_TOO_LARGE => {
                        axum::response::IntoResponse::into_response(error::ApiError::TooLarge(
                            Some(limit),
                        ))
                    }
                    _ => response,
                })
            },
        ))
}

/// The operations routes alone (`/healthz`, `/readyz`, `/metrics`): what a replica
/// without the `api` role serves, so its probes and scrapes work like any other's.
pub fn operations_router(state: AppState) -> Router {
    let routes = Router::new()
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .route("/metrics", get(ops::metrics));
    finish(limited(routes, 0), state)
}

/// The layers every router shares: metrics, the problem+json fallback and shapes,
/// tracing.
fn finish(routes: Router<AppState>, state: AppState) -> Router {
    routes
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            metrics::track,
        ))
        .fallback(|| async { error::ApiError::UnknownPath })
        .layer(axum::middleware::map_response(error::normalize))
        // Request spans and failures at DEBUG: a 5xx with a cause is logged once, with
        // that cause, where it is answered (`error`); a 503 from /readyz while a
        // replica drains is expected and no error at all.
        .layer(
            tower_http::trace::TraceLayer::new_for_http().on_failure(
                tower_http::trace::DefaultOnFailure::new().level(tracing::Level::DEBUG),
            ),
        )
        .with_state(state)
}

/// What the HTTP server of a replica is started with.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    pub listen: String,
    /// For the server's own LISTEN connections: the direct URL when one is set; none
    /// with `--listen-notify false` (the shared poll then carries every change).
    pub listen_url: Option<String>,
    /// The body limit of every route.
    pub body_limit: usize,
    /// Listen for other replicas' work wake-ups too (so claim long-polls answer at
    /// once): needed when this replica runs no in-process workers, which otherwise do.
    pub listen_wakeups: bool,
    /// Serve the `/v1/` API (role `api`); without it only the operations routes.
    pub api: bool,
    /// The longest a long poll is held.
    pub max_wait: Duration,
}

impl HttpConfig {
    /// The HTTP settings of a replica's configuration.
    pub fn of(config: &crate::config::ServeConfig) -> Self {
        HttpConfig {
            listen: config.listen.clone(),
            listen_url: config
                .listen_notify
                .then(|| config.session_url().to_owned()),
            body_limit: config.body_limit(),
            listen_wakeups: config.listen_notify && !config.has(crate::config::Role::Worker),
            api: config.has(crate::config::Role::Api),
            max_wait: Duration::from_secs(config.max_wait_seconds),
        }
    }
}

/// The document with this replica's registered task types as the enum of every
/// `task_type` field, so clients and fuzzers see what a submit or claim accepts.
fn with_task_types(mut doc: serde_json::Value, names: &[String]) -> serde_json::Value {
    if names.is_empty() {
        return doc;
    }
    for pointer in [
        "/components/schemas/SubmitBody/properties/task_type",
        "/components/schemas/ClaimBody/properties/task_types/items",
    ] {
        if let Some(schema) = doc.pointer_mut(pointer).and_then(|s| s.as_object_mut()) {
            schema.insert("enum".into(), serde_json::json!(names));
        }
    }
    doc
}

/// A running HTTP server of one replica.
pub struct HttpServer {
    state: AppState,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    listener_stop: CancellationToken,
    /// The address actually bound.
    pub local_addr: std::net::SocketAddr,
}

impl HttpServer {
    /// Binds `config.listen` and serves `tasklane`, with its own events listener;
    /// `/metrics` renders `telemetry`.
    pub async fn start(
        config: &HttpConfig,
        tasklane: Tasklane,
        telemetry: crate::telemetry::Telemetry,
    ) -> anyhow::Result<Self> {
        let listen = &config.listen;
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("bind {listen}"))?;
        HttpServer::start_on(listener, config, tasklane, telemetry)
    }

    /// Serves `tasklane` on `listener` (already bound: see [`starting`]), as
    /// [`HttpServer::start`] does.
    pub fn start_on(
        listener: tokio::net::TcpListener,
        config: &HttpConfig,
        tasklane: Tasklane,
        telemetry: crate::telemetry::Telemetry,
    ) -> anyhow::Result<Self> {
        let local_addr = listener.local_addr()?;
        let state = AppState::new(config, tasklane, telemetry);
        let listener_stop = CancellationToken::new();
        let app = if config.api {
            state.spawn_sources(config, listener_stop.clone());
            router(state.clone(), config.body_limit)
        } else {
            operations_router(state.clone())
        };
        let stopping = state.stopping.clone();
        let server = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(stopping.cancelled_owned())
                .await
        });
        tracing::info!(%local_addr, api = config.api, "HTTP listening");
        Ok(HttpServer {
            state,
            server,
            listener_stop,
            local_addr,
        })
    }

    /// Readiness false for `drain` while still serving, then waits and streams end,
    /// the listener closes and in-flight requests finish, within `grace`.
    pub async fn shutdown(self, drain: Duration, grace: Duration) {
        self.state.ready.store(false, Ordering::SeqCst);
        tokio::time::sleep(drain).await;
        self.state.stopping.cancel();
        match tokio::time::timeout(grace, self.server).await {
            Ok(Ok(Ok(()))) => tracing::info!("HTTP drained"),
            Ok(Ok(Err(error))) => tracing::warn!(%error, "HTTP server"),
            Ok(Err(error)) => tracing::warn!(%error, "HTTP server task"),
            Err(_) => tracing::warn!("HTTP requests still running after the grace period"),
        }
        self.listener_stop.cancel();
    }
}
