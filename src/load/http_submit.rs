//! Submitting over the HTTP API (`POST /v1/tasks`, docs/api.md), for load against a deployed
//! cluster or replicas started with the `api` role. Kept apart from the Rust-API driver
//! ([`super::submit`]) so the rest of the load generator does not care which one runs.
//!
//! The API answers `202 Accepted` only after the submit's transaction committed, so the
//! moment the answer arrives is an upper bound of the commit instant: pickup measured
//! from it is, if anything, a little short of the truth by the response's trip back.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Instant, SystemTime};

use super::submit::Accepted;
use crate::task::SubmitRequest;

/// A pool of HTTP connections to one or more replicas, used round robin.
pub struct HttpSubmitter {
    client: reqwest::Client,
    urls: Vec<String>,
    token: String,
    next: AtomicUsize,
}

impl HttpSubmitter {
    /// `urls` are replica base URLs (`http://127.0.0.1:8080`); `token` needs `submit`.
    pub fn new(urls: Vec<String>, token: String) -> anyhow::Result<Self> {
        anyhow::ensure!(
            !urls.is_empty(),
            "HTTP submits need at least one replica URL"
        );
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(256)
            .build()?;
        Ok(HttpSubmitter {
            client,
            urls,
            token,
            next: AtomicUsize::new(0),
        })
    }

    /// Submits `request`; an error is the problem+json `code`, or `http_<status>`, or
    /// `connect_error` when no answer came.
    pub async fn submit(&self, request: &SubmitRequest) -> Result<Accepted, String> {
        let url = &self.urls[self.next.fetch_add(1, Ordering::Relaxed) % self.urls.len()];
        let started = Instant::now();
        let response = self
            .client
            .post(format!("{url}/v1/tasks"))
            .bearer_auth(&self.token)
            .json(request)
            .send()
            .await
            .map_err(|_| "connect_error".to_owned())?;
        let committed_at = SystemTime::now();
        let latency = started.elapsed();
        let status = response.status();
        let body: serde_json::Value = response.json().await.unwrap_or(serde_json::Value::Null);
        if !status.is_success() {
            let code = body.get("code").and_then(|c| c.as_str()).map(str::to_owned);
            return Err(code.unwrap_or_else(|| format!("http_{}", status.as_u16())));
        }
        let id = body
            .get("id")
            .and_then(|v| v.as_str())
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| "bad_response".to_owned())?;
        Ok(Accepted {
            id,
            committed_at,
            latency,
            created: status.as_u16() == 202,
        })
    }
}
