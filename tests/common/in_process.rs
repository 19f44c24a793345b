//! A replica served in-process, for the HTTP tests that need no second process, no
//! signal and nothing else a process does: the same [`Replica`] (workers, maintenance,
//! registry) and the same router as `tasklane serve`, on the test's runtime, with every
//! request handed to the router by `tower::ServiceExt::oneshot` instead of a socket.
//! It takes the [`Options`] of [`super::serve`] (environment variables become the
//! flags of the same names), and its [`Api`] is the one the process tests use, so a
//! test moves between the two by changing one line.

#![allow(dead_code)]

use std::collections::HashMap;

use axum::Router;
use clap::Parser;
use tasklane::config::ServeConfig;
use tasklane::http::{AppState, HttpConfig};
use tasklane::server::Replica;
use tasklane::task::types_file::DEMO_TASK_TYPES;
use tasklane::telemetry::Telemetry;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

use super::api::Api;
use super::serve::{Options, TypesFile};

/// What the requests of an in-process replica are addressed to (never resolved).
pub const BASE: &str = "http://in-process.invalid";

/// `tasklane serve`'s flags, parsed the way the binary parses them.
#[derive(Parser)]
#[command(args_override_self = true)]
struct Flags {
    #[command(flatten)]
    config: ServeConfig,
}

/// `args` (after the program name) parsed as `tasklane serve` parses its flags.
pub fn serve_flags<S: AsRef<str>>(args: &[S]) -> Result<ServeConfig, clap::Error> {
    let args = args.iter().map(|arg| arg.as_ref());
    Flags::try_parse_from(std::iter::once("tasklane-serve").chain(args)).map(|f| f.config)
}

/// A replica and its router in this process; its services stop when it is dropped.
pub struct InProcess {
    /// [`BASE`], for tests that build requests by hand.
    pub base: String,
    router: Router,
    state: AppState,
    replica: Replica,
    sources: CancellationToken,
    _types: TypesFile,
}

impl InProcess {
    /// Starts a replica (migrations skipped: the test database is a migrated copy) and
    /// its router, configured as [`super::serve::Serve::spawn`] configures a process.
    pub async fn start(database_url: &str, options: Options) -> InProcess {
        let types = TypesFile::new(options.task_types.unwrap_or(DEMO_TASK_TYPES));
        let config = config(database_url, &types, &options);
        let telemetry = Telemetry::local();
        let replica = Replica::start(&config, HashMap::new(), &telemetry)
            .await
            .expect("start an in-process replica");
        let http = HttpConfig::of(&config);
        let state = AppState::new(&http, replica.tasklane.clone(), telemetry);
        let sources = CancellationToken::new();
        state.spawn_sources(&http, sources.clone());
        let router = tasklane::http::router(state.clone(), http.body_limit);
        InProcess {
            base: BASE.to_owned(),
            router,
            state,
            replica,
            sources,
            _types: types,
        }
    }

    /// A client of this replica using `token`.
    pub fn api(&self, token: &str) -> Api {
        Api {
            base: self.base.clone(),
            token: token.to_owned(),
            http: reqwest::Client::new(),
            router: Some(self.router.clone()),
        }
    }
}

impl Drop for InProcess {
    /// Ends streams and long polls and stops the services; the workers end with the
    /// test's runtime (as a killed process's would), and the test database is dropped
    /// with `FORCE` after this.
    fn drop(&mut self) {
        self.state.stopping.cancel();
        self.sources.cancel();
        self.replica.shutdown_token().cancel();
    }
}

/// The configuration a `tasklane serve` child of [`super::serve`] would build: the
/// same defaults, then `options`, whose `TASKLANE_X_Y` variables become `--x-y` flags.
fn config(database_url: &str, types: &TypesFile, options: &Options) -> ServeConfig {
    let mut args: Vec<String> = vec!["--no-migrate".into()];
    let mut flag = |name: &str, value: &str| args.extend([format!("--{name}"), value.into()]);
    flag("database-url", database_url);
    flag("task-types", &types.path.to_string_lossy());
    flag("pool-size", "8");
    flag("shutdown-grace-seconds", "5");
    if let Some(roles) = options.roles {
        flag("roles", roles);
    }
    if let Some(name) = &options.name {
        flag("replica-name", name);
    }
    for (key, value) in &options.env {
        let name = key
            .strip_prefix("TASKLANE_")
            .unwrap_or_else(|| panic!("{key} is not a TASKLANE_ variable"));
        flag(&name.to_lowercase().replace('_', "-"), value);
    }
    args.extend(options.args.iter().cloned());
    serve_flags(&args).unwrap_or_else(|e| panic!("serve flags {args:?}: {e}"))
}

/// Hands `request` to `router` as a connection would, and answers as reqwest does.
pub async fn oneshot(router: &Router, request: reqwest::Request) -> reqwest::Response {
    // What hyper's client writes on the wire for a body of known size; the body limit
    // refuses on it before any handler runs.
    let length = request
        .body()
        .and_then(|body| body.as_bytes())
        .map(<[u8]>::len);
    let mut request: axum::http::Request<reqwest::Body> =
        request.try_into().expect("an HTTP request");
    if let Some(length) = length {
        request
            .headers_mut()
            .entry(axum::http::header::CONTENT_LENGTH)
            .or_insert(length.into());
    }
    let response = router
        .clone()
        .oneshot(request.map(axum::body::Body::new))
        .await
        .expect("the router is infallible");
    reqwest::Response::from(
        response.map(|body| reqwest::Body::wrap_stream(body.into_data_stream())),
    )
}
