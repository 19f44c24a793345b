//! Submitting through the application service, as a replica's HTTP handler does
//! (`Tasklane::submit`: validate, one prepared statement that is its own transaction,
//! then wake workers). The commit instant is recorded between the statement's return
//! and the wake-up, so pickup latency is measured from the moment the task became
//! visible, never before it. [`service`] builds such a service for load from outside a
//! fleet; [`pickup`] reads what was submitted back.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::stats::Summary;
use crate::service::{Owner, ServiceError, SubmitOutcome, Tasklane, Wakeup};
use crate::task::catalog::TaskTypes;
use crate::task::types_file::{TaskTypesFile, DEMO_TASK_TYPES};
use crate::task::SubmitRequest;

/// One submit that was accepted.
#[derive(Debug, Clone, Copy)]
pub struct Accepted {
    pub id: Uuid,
    /// Wall clock right after the commit returned (same clock as the database's on this
    /// machine).
    pub committed_at: SystemTime,
    /// From the call to the commit's return.
    pub latency: Duration,
    pub created: bool,
}

impl Accepted {
    /// From the commit to `at` (a time the database wrote); zero for a claim that
    /// landed a hair before the client saw its commit answer.
    pub fn since_commit(&self, at: DateTime<Utc>) -> Duration {
        SystemTime::from(at)
            .duration_since(self.committed_at)
            .unwrap_or_default()
    }
}

/// A service on `pool` that submits the demo task types (`noop`, `sleep`) from outside
/// the fleet: other processes' workers hear of its submits by NOTIFY (at most one per
/// 5 ms, as a replica sends them) until `shutdown`.
pub fn service(
    pool: &crate::store::Pool,
    shutdown: &CancellationToken,
) -> anyhow::Result<Tasklane> {
    let types = TaskTypesFile::parse(DEMO_TASK_TYPES)?;
    let wakeup = Wakeup::default();
    tokio::spawn(wakeup.clone().run_notifier(
        pool.clone(),
        Duration::from_millis(5),
        shutdown.clone(),
    ));
    Ok(Tasklane::new(
        pool.clone(),
        Arc::new(TaskTypes::new(types)),
        wakeup,
        crate::task::bounds::DEFAULT_INPUT_BYTES,
    ))
}

/// Pickup latency of `accepted` (from each commit to the task's first claim, its
/// first `task.running` event); tasks not claimed yet are left out.
pub async fn pickup(
    client: &tokio_postgres::Client,
    accepted: &[Accepted],
) -> anyhow::Result<Summary> {
    let ids: Vec<Uuid> = accepted.iter().map(|a| a.id).collect();
    let running: std::collections::HashMap<Uuid, DateTime<Utc>> =
        super::store::timings(client, &ids)
            .await?
            .into_iter()
            .filter_map(|t| Some((t.id, t.running_at?)))
            .collect();
    let samples: Vec<Duration> = accepted
        .iter()
        .filter_map(|a| Some(a.since_commit(*running.get(&a.id)?)))
        .collect();
    Ok(Summary::of(&samples))
}

/// Submits `request` for `app` through `tasklane`; errors come back as a stable code.
pub async fn submit(
    tasklane: &Tasklane,
    app: &str,
    request: &SubmitRequest,
) -> Result<Accepted, String> {
    let started = Instant::now();
    let mut committed = None;
    let submitted = tasklane
        .submit_with(&Owner::app(app), request, None, || {
            committed = Some((SystemTime::now(), started.elapsed()));
        })
        .await
        .map_err(|e| code(&e))?;
    let (committed_at, latency) = committed.expect("an accepted submit was committed");
    Ok(Accepted {
        id: submitted.task.id,
        committed_at,
        latency,
        created: submitted.outcome == SubmitOutcome::Created,
    })
}

/// The stable error code the HTTP API would answer with.
pub fn code(error: &ServiceError) -> String {
    error.code().to_owned()
}

/// A request for load: a fresh effect key per `n`, spread over 100 scopes.
pub fn request(run: &str, n: u64, task_type: &str, input: &serde_json::Value) -> SubmitRequest {
    SubmitRequest {
        task_type: task_type.to_owned(),
        scope_id: format!("load-{}", n % 100),
        effect_key: format!("{run}-{n}"),
        source_id: None,
        usage_subject: None,
        input: input.clone(),
        priority: None,
        deadline_seconds: None,
        max_attempts: None,
        on_restart: None,
        privacy: None,
    }
}
