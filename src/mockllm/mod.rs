//! A scriptable OpenAI-compatible Chat Completions server on loopback, for tests, the
//! `inflight` benchmark and `tasklane dev --mock-llm`. Answers are scripted per model
//! (the model a route sets): a queue of [`Reply`]s consumed one per call, then a
//! default. It counts calls per model, keeps each model's last request body, sees
//! clients that hang up before their answer (a cancelled attempt closes its
//! connection), and serves https with a certificate the caller brings (tests sign one
//! with a CA of their own).

pub mod demo;
mod instance;
mod reply;
mod tls;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use tokio_util::sync::CancellationToken;

pub use reply::{answered_by, Reply, STAMP_DIGITS, SYSTEM_FINGERPRINT};

/// A running mock; it stops when dropped.
pub struct MockLlm {
    addr: SocketAddr,
    scheme: &'static str,
    state: Arc<Shared>,
    stop: CancellationToken,
}

#[derive(Default)]
struct Shared {
    scripts: Mutex<HashMap<String, VecDeque<Reply>>>,
    defaults: Mutex<HashMap<String, Reply>>,
    calls: Mutex<HashMap<String, u64>>,
    /// The `Authorization` header of each model's last call.
    authorization: Mutex<HashMap<String, Option<String>>>,
    /// The body of each model's last call.
    requests: Mutex<HashMap<String, serde_json::Value>>,
    disconnects: AtomicU64,
    answered: AtomicU64,
}

impl MockLlm {
    /// Serves plain http on an ephemeral loopback port.
    pub async fn start() -> anyhow::Result<MockLlm> {
        MockLlm::start_on("127.0.0.1:0".parse()?).await
    }

    /// Serves plain http on `addr`.
    pub async fn start_on(addr: SocketAddr) -> anyhow::Result<MockLlm> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let (state, stop, router) = MockLlm::parts();
        let shutdown = stop.clone();
        tokio::spawn(async move {
            let serve = axum::serve(listener, router)
                .with_graceful_shutdown(async move { shutdown.cancelled().await });
            if let Err(error) = serve.await {
                tracing::warn!(%error, "mock LLM server");
            }
        });
        Ok(MockLlm {
            addr,
            scheme: "http",
            state,
            stop,
        })
    }

    /// Serves https on an ephemeral loopback port with `cert_pem` (the chain, leaf
    /// first) and `key_pem`.
    pub async fn start_tls(cert_pem: &[u8], key_pem: &[u8]) -> anyhow::Result<MockLlm> {
        let acceptor = tls::acceptor(cert_pem, key_pem)?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (state, stop, router) = MockLlm::parts();
        tokio::spawn(tls::serve(listener, acceptor, router, stop.clone()));
        Ok(MockLlm {
            addr,
            scheme: "https",
            state,
            stop,
        })
    }

    fn parts() -> (Arc<Shared>, CancellationToken, Router) {
        let state = Arc::new(Shared::default());
        let router = Router::new()
            .route("/v1/chat/completions", post(chat))
            .with_state(state.clone());
        (state, CancellationToken::new(), router)
    }

    /// `http://127.0.0.1:PORT/v1` (https for a TLS mock: then `localhost`, the name
    /// test certificates are issued for).
    pub fn base_url(&self) -> String {
        match self.scheme {
            "https" => format!("https://localhost:{}/v1", self.addr.port()),
            _ => format!("http://{}/v1", self.addr),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queues `replies` for `model`'s next calls (after what is queued already).
    pub fn script(&self, model: &str, replies: impl IntoIterator<Item = Reply>) {
        lock(&self.state.scripts)
            .entry(model.to_owned())
            .or_default()
            .extend(replies);
    }

    /// What `model` answers once its queue is empty (default: [`Reply::ok`]).
    pub fn set_default(&self, model: &str, reply: Reply) {
        lock(&self.state.defaults).insert(model.to_owned(), reply);
    }

    /// Calls received for `model`.
    pub fn calls(&self, model: &str) -> u64 {
        lock(&self.state.calls).get(model).copied().unwrap_or(0)
    }

    /// The `Authorization` header of `model`'s last call.
    pub fn last_authorization(&self, model: &str) -> Option<String> {
        lock(&self.state.authorization)
            .get(model)
            .cloned()
            .flatten()
    }

    /// The request body of `model`'s last call.
    pub fn last_request(&self, model: &str) -> Option<serde_json::Value> {
        lock(&self.state.requests).get(model).cloned()
    }

    /// Calls whose client hung up before the answer was ready.
    pub fn disconnects(&self) -> u64 {
        self.state.disconnects.load(Ordering::SeqCst)
    }

    /// Calls answered in full (a status or a completion).
    pub fn answered(&self) -> u64 {
        self.state.answered.load(Ordering::SeqCst)
    }
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Counts a disconnect when dropped before [`Pending::done`]: the server drops a
/// handler whose client closed the connection.
struct Pending {
    state: Arc<Shared>,
    done: bool,
}

impl Pending {
    fn done(mut self) {
        self.done = true;
        self.state.answered.fetch_add(1, Ordering::SeqCst);
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.done {
            self.state.disconnects.fetch_add(1, Ordering::SeqCst);
        }
    }
}

async fn chat(State(state): State<Arc<Shared>>, headers: HeaderMap, body: String) -> Response {
    let request: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    let model = request
        .get("model")
        .and_then(|m| m.as_str())
        .unwrap_or("")
        .to_owned();
    *lock(&state.calls).entry(model.clone()).or_default() += 1;
    let authorization = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    lock(&state.authorization).insert(model.clone(), authorization);
    lock(&state.requests).insert(model.clone(), request.clone());
    let reply = lock(&state.scripts)
        .get_mut(&model)
        .and_then(VecDeque::pop_front)
        .or_else(|| lock(&state.defaults).get(&model).cloned())
        .unwrap_or_else(Reply::ok)
        .for_request(&request);
    let pending = Pending {
        state: state.clone(),
        done: false,
    };
    if !reply.latency.is_zero() {
        tokio::time::sleep(reply.latency).await;
    }
    if let Some(events) = reply.stream(&model, &request) {
        return streamed(events, pending);
    }
    let response = reply.respond(&model, &request);
    pending.done();
    response
}

/// Now, as a stamped chunk carries it.
fn stamp() -> String {
    let micros = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros();
    format!("{micros:0width$}", width = STAMP_DIGITS)
}

/// An event stream of `events`, each after its pause. The call counts as answered
/// once the last event is written; a client that hangs up before is a disconnect.
fn streamed(events: Vec<(std::time::Duration, String)>, pending: Pending) -> Response {
    let state = (events.into_iter(), Some(pending));
    let body = futures_util::stream::unfold(state, |(mut events, mut pending)| async move {
        let Some((pause, event)) = events.next() else {
            if let Some(pending) = pending.take() {
                pending.done();
            }
            return None;
        };
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
        let event = match event.contains(reply::STAMP) {
            true => event.replace(reply::STAMP, &stamp()),
            false => event,
        };
        let bytes = axum::body::Bytes::from(event);
        Some((Ok::<_, std::convert::Infallible>(bytes), (events, pending)))
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(axum::body::Body::from_stream(body))
        .expect("a static response")
}
