//! Three replicas, the local route down: its circuit opens once for the cluster,
//! `external_allowed` tasks fall back to the external route and succeed, `local_only`
//! ones wait for the circuit (a probe now and then, one per open window across the
//! cluster); the local route back up, a probe closes the circuit, the waiting tasks
//! answer locally and new tasks run locally again.

use std::time::{Duration, Instant};

use serde_json::json;
use tasklane::mockllm::{MockLlm, Reply};

use super::{openai_type, state_code, submit, terminal, R};
use crate::common::api::{self, ALL};
use crate::common::in_process::InProcess;
use crate::common::serve::Options;
use crate::common::{self, eventually};

const FAILURES: u64 = 3;
const OPEN_SECONDS: u64 = 2;

#[tokio::test]
async fn three_replicas_share_one_circuit_and_fall_back() {
    let db = common::test_db().await;
    let mock = MockLlm::start().await.unwrap();
    let base = mock.base_url();
    let mut types = openai_type(
        "chat",
        "external_allowed = true\nmax_attempts = 10",
        &[
            R {
                name: "loc",
                kind: "local",
                model: "lm",
                base_url: &base,
            },
            R {
                name: "ext",
                kind: "external",
                model: "xm",
                base_url: &base,
            },
        ],
        None,
    );
    types = types.replacen(
        "model = \"lm\"",
        &format!(
            "model = \"lm\"\ncircuit_failures = {FAILURES}\ncircuit_open_seconds = {OPEN_SECONDS}"
        ),
        1,
    );
    mock.set_default("lm", Reply::status(503, "local model down", None));
    mock.set_default("xm", Reply::completion("external", 5, 5));
    let types: &'static str = Box::leak(types.into_boxed_str());
    let mut replicas = Vec::new();
    for n in 0..3 {
        let options = Options {
            task_types: Some(types),
            name: Some(format!("r{n}")),
            ..Default::default()
        };
        replicas.push(InProcess::start(&db.url, options).await);
    }
    let token = api::token(&db.url, "ai", None, &[ALL, &["admin"]].concat()).await;
    let apis: Vec<_> = replicas.iter().map(|r| r.api(&token)).collect();
    let started = Instant::now();
    let c = db.client().await;

    // First the threshold's worth of tasks alone: each calls the local route once, fails
    // and falls back, and their failures open the circuit. A call that starts while the
    // circuit is still closed goes through (a breaker cannot recall it), so the others
    // are submitted only once it is open: then every replica must refuse the local route
    // but for one probe per open window, which per-replica circuits would not.
    let mut shared = Vec::new();
    for i in 0..FAILURES as usize {
        let options = json!({"privacy": "external_allowed"});
        shared.push(submit(&apis[i % 3], "chat", &format!("x{i}"), options).await);
    }
    eventually(Duration::from_secs(20), "the circuit to open", || async {
        let open = loc_circuit(&c, "coalesce(bool_or(opened_at IS NOT NULL), false)").await;
        if open {
            Ok(())
        } else {
            Err("still closed")
        }
    })
    .await;
    let mut private = Vec::new();
    for i in FAILURES as usize..6 {
        let options = json!({"privacy": "external_allowed"});
        shared.push(submit(&apis[i % 3], "chat", &format!("x{i}"), options).await);
    }
    for i in (0..6).step_by(2) {
        private.push(submit(&apis[i % 3], "chat", &format!("l{i}"), json!({})).await);
    }
    for id in &shared {
        let task = terminal(&apis[0], id).await;
        assert_eq!(state_code(&task), ("succeeded".into(), None), "{task}");
        assert_eq!(task["result"]["message"]["content"], "external");
    }
    for id in &private {
        let task = apis[0].get(&format!("/v1/tasks/{id}")).await.body;
        assert!(
            !matches!(task["state"].as_str(), Some("failed" | "succeeded")),
            "a local-only task waits while the local route is down: {task}"
        );
    }
    // Opened once for the cluster: the local route saw its threshold of failures and at
    // most one probe per open window since (counted from before the first submit).
    let windows = started.elapsed().as_secs() / OPEN_SECONDS + 1;
    let local_calls = mock.calls("lm");
    assert!(
        (FAILURES..=FAILURES + windows).contains(&local_calls),
        "{local_calls} local calls in {windows} windows"
    );
    let circuits = apis[1].get("/v1/admin/circuits").await;
    let loc = circuits.body["items"]
        .as_array()
        .and_then(|items| items.iter().find(|c| c["route_name"] == "loc"))
        .cloned()
        .unwrap_or_else(|| panic!("no circuit loc: {:?}", circuits.body));
    assert_ne!(loc["state"], "closed", "{loc}");

    // The local model is back: once the open time has passed, one probe closes it.
    mock.set_default("lm", Reply::completion("local", 5, 5));
    eventually(Duration::from_secs(20), "the open time to pass", || async {
        let due = loc_circuit(
            &c,
            "coalesce(bool_and(retry_at IS NULL OR retry_at <= now()), true)",
        )
        .await;
        if due {
            Ok(())
        } else {
            Err("still open")
        }
    })
    .await;
    for id in &private {
        let what = format!("waiting task {id} to answer locally");
        let task = eventually(Duration::from_secs(60), &what, || async {
            let task = apis[0].get(&format!("/v1/tasks/{id}")).await.body;
            match task["state"].as_str() {
                Some("succeeded" | "failed" | "cancelled") => Ok(task),
                _ => Err(task),
            }
        })
        .await;
        assert_eq!(state_code(&task), ("succeeded".into(), None), "{task}");
        assert_eq!(task["result"]["message"]["content"], "local");
    }
    let circuits = apis[0].get("/v1/admin/circuits").await;
    let loc = circuits.body["items"]
        .as_array()
        .and_then(|items| items.iter().find(|c| c["route_name"] == "loc"))
        .cloned()
        .unwrap();
    assert_eq!(loc["state"], "closed", "{loc}");
    for i in 0..3 {
        let id = submit(
            &apis[i],
            "chat",
            &format!("after{i}"),
            json!({"privacy": "external_allowed"}),
        )
        .await;
        let task = terminal(&apis[0], &id).await;
        assert_eq!(
            (
                task["result"]["message"]["content"].as_str(),
                task["attempt"].as_i64()
            ),
            (Some("local"), Some(1)),
            "{task}"
        );
    }
    assert_eq!(
        mock.calls("xm"),
        shared.len() as u64,
        "the external route only for fallbacks"
    );
}

/// `aggregate`, a boolean aggregate with its answer for no row, over the circuit row of
/// the route `loc`, as the database sees it now.
async fn loc_circuit(c: &tokio_postgres::Client, aggregate: &str) -> bool {
    let query = format!("SELECT {aggregate} FROM tasklane.circuits WHERE route_name = 'loc'");
    c.query_one(&query, &[]).await.unwrap().get(0)
}
