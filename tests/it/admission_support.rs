//! Shortcuts for the admission tests: a `Tasklane` handle on a test database, concurrent
//! submitters that start together, and limits set through the admin functions.

#![allow(dead_code)]

use std::sync::Arc;

use tasklane::admission::{self, LimitKind, LimitSpec, RefusalCode};
use tasklane::service::{Owner, ServiceError, Tasklane, Wakeup};
use tasklane::store::lease;
use tasklane::task::record::Submitted;
use tasklane::task::settlement::Success;
use tasklane::task::{Executor, SubmitRequest, TaskType, TaskTypes};
use tokio::sync::Barrier;
use tokio_postgres::Client;

use crate::common::fixtures::{self, APP, TYPE};

/// A handle on `url` with the fixture type and a pool of `size` connections.
pub fn tasklane(url: &str, size: usize) -> Tasklane {
    let task_types = TaskTypes::new([
        fixtures::task_type(),
        TaskType::new("other", Executor::Noop),
    ]);
    Tasklane::new(
        crate::common::pool(url, size),
        Arc::new(task_types),
        Wakeup::default(),
        1 << 20,
    )
}

pub fn request(key: &str, subject: Option<&str>) -> SubmitRequest {
    let mut r = fixtures::request(key, serde_json::json!({"k": key}));
    r.usage_subject = subject.map(str::to_owned);
    r
}

pub fn limit(
    kind: LimitKind,
    app: Option<&str>,
    subject: Option<&str>,
    max: i64,
    window: Option<i64>,
) -> LimitSpec {
    LimitSpec {
        kind,
        app: app.map(str::to_owned),
        usage_subject: subject.map(str::to_owned),
        limit: max,
        window_seconds: window,
    }
}

pub async fn set(c: &Client, spec: LimitSpec) {
    admission::set_limit(c, &spec).await.expect("set limit");
}

/// What a batch of concurrent submits came to.
#[derive(Debug, Default)]
pub struct Outcome {
    pub admitted: Vec<Submitted>,
    pub refused: Vec<RefusalCode>,
}

/// `n` submits of distinct keys `<prefix>-<i>` for `app`, each on its own connection,
/// released together by a barrier. Any error other than a refusal fails the test.
pub async fn submit_together(
    tl: &Tasklane,
    app: &str,
    prefix: &str,
    n: usize,
    subject: Option<&str>,
) -> Outcome {
    let barrier = Arc::new(Barrier::new(n));
    let mut set = tokio::task::JoinSet::new();
    for i in 0..n {
        let (tl, barrier, app) = (tl.clone(), barrier.clone(), app.to_owned());
        let r = request(&format!("{prefix}-{i}"), subject);
        set.spawn(async move {
            let _warm = tl.pool().get().await.expect("connection");
            drop(_warm);
            barrier.wait().await;
            tl.submit(&Owner::app(app.as_str()), &r).await
        });
    }
    let mut outcome = Outcome::default();
    while let Some(result) = set.join_next().await {
        match result.expect("submitter") {
            Ok(submitted) => outcome.admitted.push(submitted),
            Err(ServiceError::Refused(refusal)) => outcome.refused.push(refusal.code),
            Err(error) => panic!("submit failed: {error}"),
        }
    }
    outcome
}

/// Submits one request for the fixture app; the refusal code if refused.
pub async fn submit_one(
    tl: &Tasklane,
    key: &str,
    subject: Option<&str>,
) -> Result<Submitted, RefusalCode> {
    match tl.submit(&Owner::app(APP), &request(key, subject)).await {
        Ok(s) => Ok(s),
        Err(ServiceError::Refused(r)) => Err(r.code),
        Err(e) => panic!("submit failed: {e}"),
    }
}

/// Claims every claimable task of the fixture type and completes it with `units`.
pub async fn complete_all(c: &Client, units: Option<i64>) -> usize {
    let mut done = 0;
    loop {
        let claimed = fixtures::claim(c, 100).await;
        if claimed.is_empty() {
            return done;
        }
        for task in claimed {
            let success = Success {
                result: serde_json::json!({}),
                usage_units: units,
                ..Default::default()
            };
            lease::complete(c, task.id, task.lease_token, &success)
                .await
                .expect("complete");
            done += 1;
        }
    }
}

pub use crate::common::fixtures::count;

pub async fn non_terminal(c: &Client) -> i64 {
    count(c, "SELECT count(*) FROM tasklane.tasks WHERE state NOT IN ('succeeded', 'failed', 'cancelled')").await
}

pub async fn held_slots(c: &Client) -> i64 {
    count(
        c,
        "SELECT count(*) FROM tasklane.capacity_slots WHERE task_id IS NOT NULL",
    )
    .await
}

pub const _TYPE: &str = TYPE;
