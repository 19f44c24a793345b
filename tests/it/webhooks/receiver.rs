//! A webhook receiver on loopback for the tests: it answers as scripted (default 200),
//! records every request, and checks every signature against the secrets it is told
//! the endpoint has, as a real receiver would.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tasklane::webhooks::signature;
use tokio::time::Instant;

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    /// Hold the request this long first.
    pub delay: Duration,
}

impl Reply {
    pub fn status(status: u16) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            delay: Duration::ZERO,
        }
    }

    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Reply {
        self.headers.push((name, value.into()));
        self
    }

    pub fn delay(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }
}

/// A request as received.
#[derive(Debug, Clone)]
pub struct Received {
    pub id: String,
    pub timestamp: i64,
    pub signature: String,
    pub content_type: String,
    pub body: Value,
    pub at: Instant,
    /// Which of the receiver's secrets verified a signature, in order.
    pub verified: Vec<bool>,
}

#[derive(Default)]
struct Inner {
    script: VecDeque<Reply>,
    received: Vec<Received>,
    secrets: Vec<String>,
}

/// A running receiver; stops with the test's runtime.
#[derive(Clone)]
pub struct Receiver {
    pub url: String,
    inner: Arc<Mutex<Inner>>,
}

impl Receiver {
    pub async fn start() -> Receiver {
        let inner: Arc<Mutex<Inner>> = Arc::default();
        let app = axum::Router::new()
            .fallback(receive)
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Receiver { url, inner }
    }

    /// Answers the next requests with `replies`, in order, then 200 again.
    pub fn script(&self, replies: impl IntoIterator<Item = Reply>) {
        self.inner.lock().unwrap().script.extend(replies);
    }

    /// The endpoint's live secrets, for verifying.
    pub fn secrets(&self, secrets: &[&str]) {
        self.inner.lock().unwrap().secrets = secrets.iter().map(|s| s.to_string()).collect();
    }

    pub fn received(&self) -> Vec<Received> {
        self.inner.lock().unwrap().received.clone()
    }

    /// Waits (bounded) until at least `n` requests arrived; all of them.
    pub async fn until(&self, n: usize, within: Duration) -> Vec<Received> {
        let what = format!("{n} webhook requests");
        crate::common::eventually(within, &what, || async {
            let got = self.received();
            if got.len() >= n {
                Ok(got)
            } else {
                Err(got.len())
            }
        })
        .await
    }
}

async fn receive(
    State(inner): State<Arc<Mutex<Inner>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let id = header("webhook-id");
    let timestamp: i64 = header("webhook-timestamp").parse().unwrap_or(0);
    let signature = header("webhook-signature");
    let reply = {
        let mut inner = inner.lock().unwrap();
        let verified = inner
            .secrets
            .iter()
            .map(|secret| {
                let key = signature::key_of(secret).expect("a valid secret");
                signature::verify(&key, &signature, &id, timestamp, &body)
            })
            .collect();
        inner.received.push(Received {
            id,
            timestamp,
            signature,
            content_type: header("content-type"),
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
            at: Instant::now(),
            verified,
        });
        inner.script.pop_front().unwrap_or(Reply::status(200))
    };
    tokio::time::sleep(reply.delay).await;
    let mut response = StatusCode::from_u16(reply.status).unwrap().into_response();
    for (name, value) in reply.headers {
        response.headers_mut().insert(name, value.parse().unwrap());
    }
    response
}
