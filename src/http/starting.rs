//! What a replica serves while it starts: its database may not take it yet (too many
//! connections, a failover, a server still starting), and a process that exits to be
//! restarted only adds to the crowd. Meanwhile `/healthz` answers 200 (restarting would
//! not help), `/readyz` 503 saying what it waits for, and `/metrics` the process's
//! instruments. Once the replica has started, the full server takes the same listener
//! over: no request finds the port closed in between.

use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use axum::extract::State;
use axum::routing::get;
use axum::Router;
use tokio_util::sync::CancellationToken;

use super::api::ops;
use super::error::ApiError;
use crate::telemetry::Telemetry;

/// The starting server of one replica.
pub struct Starting {
    listener: std::net::TcpListener,
    waiting_for: Arc<Mutex<String>>,
    stop: CancellationToken,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    /// The address actually bound.
    pub local_addr: std::net::SocketAddr,
}

#[derive(Clone)]
struct Shared {
    waiting_for: Arc<Mutex<String>>,
    telemetry: Telemetry,
}

impl Starting {
    /// Binds `listen` and answers the operations routes until [`Starting::hand_over`].
    pub async fn start(listen: &str, telemetry: Telemetry) -> anyhow::Result<Starting> {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("bind {listen}"))?
            .into_std()?;
        let local_addr = listener.local_addr()?;
        let serving = tokio::net::TcpListener::from_std(listener.try_clone()?)?;
        let waiting_for = Arc::new(Mutex::new("the database".to_owned()));
        let shared = Shared {
            waiting_for: waiting_for.clone(),
            telemetry,
        };
        let app = Router::new()
            .route("/healthz", get(ops::healthz))
            .route("/readyz", get(not_ready))
            .route("/metrics", get(metrics))
            .fallback(|| async { ApiError::NotReady("the replica is starting".into()) })
            .with_state(shared);
        let stop = CancellationToken::new();
        let stopped = stop.clone().cancelled_owned();
        let server = tokio::spawn(async move {
            axum::serve(serving, app)
                .with_graceful_shutdown(stopped)
                .await
        });
        Ok(Starting {
            listener,
            waiting_for,
            stop,
            server,
            local_addr,
        })
    }

    /// What `/readyz` says the replica waits for.
    pub fn waiting_for(&self, what: String) {
        *self.waiting_for.lock().expect("not poisoned") = what;
    }

    /// Stops answering (requests in flight finish) and gives the listener up.
    pub async fn hand_over(self) -> anyhow::Result<tokio::net::TcpListener> {
        self.stop.cancel();
        if let Ok(Err(error)) = self.server.await {
            tracing::warn!(%error, "HTTP server while starting");
        }
        Ok(tokio::net::TcpListener::from_std(self.listener)?)
    }
}

async fn not_ready(State(shared): State<Shared>) -> ApiError {
    let waiting_for = shared.waiting_for.lock().expect("not poisoned").clone();
    ApiError::NotReady(format!("starting: waiting for {waiting_for}"))
}

async fn metrics(State(shared): State<Shared>) -> impl axum::response::IntoResponse {
    ops::render_metrics(&shared.telemetry)
}
