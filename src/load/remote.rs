//! Remote workers for the load generator: the worker protocol (docs/api.md, "Worker
//! protocol") spoken over HTTP as a worker in any language would, so the benchmarks
//! measure what a remote worker costs the server beside the in-process one. Each
//! [`RemoteWorker`] has its own keep-alive connection; it claims, heartbeats and
//! completes in batches (`POST /v1/worker/claim` with `max`, `POST /v1/worker/heartbeats`,
//! `POST /v1/worker/complete`) and writes the live output of many attempts in one request
//! (`POST /v1/worker/output`), as the clients' workers do every round.

use std::time::Duration;

use anyhow::Context;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// Most tasks one claim takes (the worker protocol's bound).
pub const MAX_CLAIM: u32 = 100;

/// One claimed attempt: what the worker needs to write for it.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Lease {
    pub id: Uuid,
    pub lease_token: Uuid,
    pub lease_expires_at: chrono::DateTime<chrono::Utc>,
}

#[derive(serde::Deserialize)]
struct Claimed {
    tasks: Vec<Lease>,
}

#[derive(serde::Deserialize)]
struct Answers {
    items: Vec<Answer>,
}

#[derive(serde::Deserialize)]
struct Answer {
    status: String,
}

/// One remote worker against one replica.
#[derive(Clone)]
pub struct RemoteWorker {
    http: reqwest::Client,
    base: String,
    token: String,
    worker_id: String,
    task_types: Vec<String>,
}

impl RemoteWorker {
    /// A worker named `worker_id` for `task_types` on the replica at `base`; `token`
    /// needs the `work` permission.
    pub fn new(
        base: &str,
        token: &str,
        worker_id: &str,
        task_types: &[&str],
    ) -> anyhow::Result<RemoteWorker> {
        Ok(RemoteWorker {
            // One connection, kept alive: a worker's requests follow one another.
            http: reqwest::Client::builder()
                .pool_max_idle_per_host(1)
                .timeout(Duration::from_secs(60))
                .build()?,
            base: base.trim_end_matches('/').to_owned(),
            token: token.to_owned(),
            worker_id: worker_id.to_owned(),
            task_types: task_types.iter().map(|t| (*t).to_owned()).collect(),
        })
    }

    async fn post(
        &self,
        path: &str,
        body: &serde_json::Value,
    ) -> anyhow::Result<reqwest::Response> {
        let response = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .json(body)
            .send()
            .await
            .with_context(|| format!("POST {path}"))?;
        let status = response.status();
        if !status.is_success() {
            let text = response.text().await.unwrap_or_default();
            anyhow::bail!("POST {path}: {status}: {text}");
        }
        Ok(response)
    }

    /// Claims up to `max` tasks, long-polling up to `wait_seconds` while none is there.
    pub async fn claim(&self, max: u32, wait_seconds: u32) -> anyhow::Result<Vec<Lease>> {
        let body = serde_json::json!({
            "worker_id": self.worker_id, "task_types": self.task_types, "route": "local",
            "max": max, "wait_seconds": wait_seconds,
        });
        let claimed: Claimed = self.post("/v1/worker/claim", &body).await?.json().await?;
        Ok(claimed.tasks)
    }

    /// Completes `leases` with `result` in batched requests (500 items at most each):
    /// how many succeeded.
    pub async fn complete(
        &self,
        leases: &[Lease],
        result: &serde_json::Value,
    ) -> anyhow::Result<usize> {
        let mut succeeded = 0;
        for chunk in leases.chunks(500) {
            let items: Vec<serde_json::Value> = chunk
                .iter()
                .map(|l| serde_json::json!({"id": l.id, "lease_token": l.lease_token, "result": result}))
                .collect();
            let body = serde_json::json!({"worker_id": self.worker_id, "items": items});
            let answers: Answers = self
                .post("/v1/worker/complete", &body)
                .await?
                .json()
                .await?;
            succeeded += answers
                .items
                .iter()
                .filter(|a| a.status == "succeeded")
                .count();
        }
        Ok(succeeded)
    }

    /// Extends the leases of `leases` in batched requests (500 items at most each): how
    /// many were extended.
    pub async fn heartbeat(&self, leases: &[Lease]) -> anyhow::Result<usize> {
        let mut extended = 0;
        for chunk in leases.chunks(500) {
            let items: Vec<serde_json::Value> = chunk
                .iter()
                .map(|l| serde_json::json!({"id": l.id, "lease_token": l.lease_token}))
                .collect();
            let body = serde_json::json!({"worker_id": self.worker_id, "items": items});
            let answers: Answers = self
                .post("/v1/worker/heartbeats", &body)
                .await?
                .json()
                .await?;
            extended += answers.items.iter().filter(|a| a.status == "ok").count();
        }
        Ok(extended)
    }

    /// Appends each text to the live output of its lease's attempt, in batched
    /// requests (500 items at most each, each lease at most once): how many were
    /// appended (the others' leases were lost or their tasks are gone).
    pub async fn write_outputs(&self, writes: &[(&Lease, String)]) -> anyhow::Result<usize> {
        let mut appended = 0;
        for chunk in writes.chunks(500) {
            let items: Vec<serde_json::Value> = chunk
                .iter()
                .map(|(l, text)| serde_json::json!({"id": l.id, "lease_token": l.lease_token, "text": text}))
                .collect();
            let answers: Answers = self
                .post("/v1/worker/output", &serde_json::json!({"items": items}))
                .await?
                .json()
                .await?;
            appended += answers.items.iter().filter(|a| a.status == "ok").count();
        }
        Ok(appended)
    }

    /// Claims (`max` 100) and completes with an empty result, batch after batch, until
    /// `stop`: how many tasks it completed. A claim waits up to a second for tasks, so
    /// an idle worker notices `stop` at once and a woken one claims at once.
    pub async fn drain(&self, stop: CancellationToken) -> anyhow::Result<u64> {
        let result = serde_json::json!({});
        let mut done = 0u64;
        loop {
            let claimed = tokio::select! {
                claimed = self.claim(MAX_CLAIM, 1) => claimed?,
                _ = stop.cancelled() => return Ok(done),
            };
            if !claimed.is_empty() {
                done += self.complete(&claimed, &result).await? as u64;
            }
        }
    }
}
