//! Terminal notifications: the outbox on every terminal path, the routes,
//! delivery to a real receiver on loopback that checks every signature, and delivery
//! through replica crashes and dropped database connections.

use crate::common;

mod crash;
mod delivery;
mod outbox;
mod receiver;
mod routes;
mod terminal_paths;

use std::time::Duration;

use common::api::Api;
use common::in_process::InProcess;
use common::serve::Options;
use serde_json::{json, Value};

pub use receiver::{Receiver, Reply};

/// How long a test waits for deliveries that should come at once. Only how long a
/// broken build takes to fail: on a two-core box at a load of 20, five deliveries
/// through a replica just started took longer than 20 s.
pub const SOON: Duration = Duration::from_secs(90);

/// An in-process replica whose deliveries may reach loopback and retry after 100 ms
/// (`extra` variables win), with a client whose token has `webhooks` and the task
/// permissions.
pub async fn replica(db: &common::TestDb, extra: &[(&'static str, &str)]) -> (InProcess, Api) {
    let mut env = vec![
        ("TASKLANE_WEBHOOK_ALLOW_CIDRS", "127.0.0.0/8".to_owned()),
        ("TASKLANE_WEBHOOK_RETRY_SCHEDULE", "100ms,100ms".to_owned()),
    ];
    for (key, value) in extra {
        env.retain(|(k, _)| k != key);
        env.push((key, value.to_string()));
    }
    let options = Options {
        env,
        ..Default::default()
    };
    let replica = InProcess::start(&db.url, options).await;
    let token = common::api::token(
        &db.url,
        "mail",
        None,
        &["submit", "read", "cancel", "webhooks"],
    )
    .await;
    let api = replica.api(&token);
    (replica, api)
}

/// PUTs endpoint `name` at `url` for every terminal event; the answer's body.
pub async fn register(api: &Api, name: &str, url: &str, secret: Option<&str>) -> Value {
    let mut body =
        json!({"url": url, "events": ["task.succeeded", "task.failed", "task.cancelled"]});
    if let Some(secret) = secret {
        body["secret"] = json!(secret);
    }
    let answer = api
        .send(
            api.http
                .put(format!("{}/v1/webhooks/{name}", api.base))
                .json(&body),
        )
        .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body
}

/// Submits a noop task (it succeeds at once); its id.
pub async fn noop(api: &Api, key: &str) -> String {
    let answer = api
        .submit("noop", "box-1", key, json!({"input": {"n": 1}}))
        .await;
    assert!(matches!(answer.status, 200 | 202), "{:?}", answer.body);
    answer.body["id"].as_str().unwrap().to_owned()
}

/// Whether the replica's `/metrics` counts webhook attempts with `outcome`.
pub async fn counted(api: &Api, outcome: &str) -> bool {
    let metrics = api.metrics().await;
    let label = format!("outcome=\"{outcome}\"");
    metrics
        .lines()
        .any(|l| l.starts_with("tasklane_webhooks_deliveries_total{") && l.contains(&label))
}

/// The endpoint's delivery log.
pub async fn log(api: &Api, name: &str) -> Vec<Value> {
    let answer = api.get(&format!("/v1/webhooks/{name}/deliveries")).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body["items"].as_array().unwrap().clone()
}

/// Waits until the endpoint's log has `n` rows all with `status`; the log.
pub async fn log_until(api: &Api, name: &str, n: usize, status: &str) -> Vec<Value> {
    let what = format!("{n} deliveries of {name} {status}");
    common::eventually(SOON, &what, || async {
        let rows = log(api, name).await;
        if rows.len() == n && rows.iter().all(|r| r["status"] == status) {
            Ok(rows)
        } else {
            Err(rows)
        }
    })
    .await
}
