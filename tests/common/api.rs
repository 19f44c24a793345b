//! A small HTTP client for the replicas of [`super::serve`] (over a socket) and of
//! [`super::in_process`] (handed to the router): tokens made with the library,
//! requests with a bearer token, answers as status, headers and JSON.

#![allow(dead_code)]

use std::time::Duration;

use serde_json::{json, Value};

use super::eventually;
use super::in_process::oneshot;

/// Creates a token with the library (the CLI is tested on its own).
pub async fn token(database_url: &str, app: &str, scope: Option<&str>, perms: &[&str]) -> String {
    let spec = tasklane::service::tokens::TokenSpec {
        app: app.into(),
        scope_id: scope.map(Into::into),
        permissions: perms.iter().map(|p| p.to_string()).collect(),
        name: None,
    };
    tasklane::service::tokens::create(database_url, &spec)
        .await
        .expect("create token")
        .secret
}

/// Every permission of the application routes and the worker protocol.
pub const ALL: &[&str] = &["submit", "read", "cancel", "release", "delete", "work"];

/// An answer: status, headers and the JSON body (Null when not JSON).
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Answer {
    /// The problem+json `code`.
    pub fn code(&self) -> &str {
        self.body["code"].as_str().unwrap_or("")
    }
}

/// A small HTTP client bound to one replica and one token. Tests build requests with
/// `http` against `base` and run them with [`Api::send`] or [`Api::execute`], which
/// reach either replica the same way.
#[derive(Clone)]
pub struct Api {
    pub base: String,
    pub token: String,
    pub http: reqwest::Client,
    /// The router of an in-process replica; `None` for a process.
    pub router: Option<axum::Router>,
}

impl Api {
    pub fn with_token(&self, token: &str) -> Api {
        Api {
            token: token.to_owned(),
            ..self.clone()
        }
    }

    pub async fn get(&self, path: &str) -> Answer {
        self.send(self.http.get(format!("{}{path}", self.base)))
            .await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Answer {
        self.send(self.http.post(format!("{}{path}", self.base)).json(body))
            .await
    }

    /// POSTs raw bytes as JSON.
    pub async fn post_raw(&self, path: &str, body: impl Into<reqwest::Body>) -> Answer {
        let request = self
            .http
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json");
        self.send(request.body(body)).await
    }

    /// Runs `request` with this client's token; the response as it arrives (a stream
    /// can be read chunk by chunk).
    pub async fn execute(&self, request: reqwest::RequestBuilder) -> reqwest::Response {
        let request = if self.token.is_empty() {
            request
        } else {
            request.bearer_auth(&self.token)
        };
        match &self.router {
            None => request.send().await.expect("send request"),
            Some(router) => oneshot(router, request.build().expect("build request")).await,
        }
    }

    pub async fn send(&self, request: reqwest::RequestBuilder) -> Answer {
        let response = self.execute(request).await;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.expect("read body");
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Answer {
            status,
            headers,
            body,
        }
    }

    /// Submits a task; `extra` fields are merged into the body.
    pub async fn submit(&self, task_type: &str, scope: &str, key: &str, extra: Value) -> Answer {
        let mut body = serde_json::json!({"task_type": task_type, "scope_id": scope, "effect_key": key, "input": {}});
        if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
            for (k, v) in extra {
                body.insert(k.clone(), v.clone());
            }
        }
        self.post("/v1/tasks", &body).await
    }

    /// The replica's `/metrics` text (served without a token).
    pub async fn metrics(&self) -> String {
        let scrape = self.http.get(format!("{}/metrics", self.base));
        self.with_token("")
            .execute(scrape)
            .await
            .text()
            .await
            .expect("read /metrics")
    }

    /// Requests to `route` (as routed, e.g. `/v1/worker/claim`) this replica is answering
    /// now, from `tasklane_http_requests_in_flight` in `/metrics` (a stream counts until
    /// it ends).
    pub async fn in_flight(&self, route: &str) -> u64 {
        let text = self.metrics().await;
        let label = format!("route=\"{route}\"");
        text.lines()
            .filter(|line| line.starts_with("tasklane_http_requests_in_flight{"))
            .filter(|line| line.contains(&label))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>() as u64
    }

    /// Waits (bounded) until this replica is answering at least `n` requests to `route`:
    /// how a test knows that a long poll it started has reached the server.
    pub async fn until_in_flight(&self, route: &str, n: u64) {
        let what = format!("{n} requests to {route} in flight");
        eventually(Duration::from_secs(10), &what, || async {
            let now = self.in_flight(route).await;
            if now >= n {
                Ok(())
            } else {
                Err(now)
            }
        })
        .await
    }

    /// Runs `count` `noop` tasks of scope `s` (keys `k0`, `k1`, ...) to success, then
    /// resubmits `k0` with another input, refused as `idempotency_conflict`: what the
    /// submit, attempt and refusal metrics need to have series.
    pub async fn run_noops_and_a_conflict(&self, count: usize) {
        for n in 0..count {
            let answer = self.submit("noop", "s", &format!("k{n}"), json!({})).await;
            assert_eq!(answer.status, 202, "{:?}", answer.body);
            let id = answer.body["id"].as_str().unwrap().to_owned();
            self.wait_for(&id, |t| t["state"] == "succeeded").await;
        }
        let refused = self
            .submit("noop", "s", "k0", json!({"input": {"other": 1}}))
            .await;
        assert_eq!(refused.code(), "idempotency_conflict");
    }

    /// Reads a task until `done` holds for it (bounded).
    pub async fn wait_for(&self, id: &str, done: impl Fn(&Value) -> bool) -> Value {
        let what = format!("task {id} to get there");
        eventually(Duration::from_secs(20), &what, || async {
            let answer = self.get(&format!("/v1/tasks/{id}")).await;
            if done(&answer.body) {
                Ok(answer.body)
            } else {
                Err(answer.body)
            }
        })
        .await
    }
}
