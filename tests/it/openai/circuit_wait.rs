//! The demo's own configuration (`tasklane dev --mock-llm`): its local model answers
//! 503 to its first calls, which open the `demo-local` circuit. Tasks that may not leave
//! the local routes wait for the circuit instead of spending their attempts (a deferral
//! is no attempt: no attempt row, an event saying `deferred`), and all succeed on the
//! local model once it is up. Tasks that may leave fall back, their local attempt
//! keeping why (`circuit_open`). The demo's `extract` type, which has an output schema,
//! succeeds with the mock's answer: JSON that matches the schema the request carried.

use std::time::Duration;

use serde_json::{json, Value};
use tasklane::task::types_file::DEMO_TASK_TYPES;

use super::{replica, submit};
use crate::common::api::{self, Api};
use crate::common::{self, eventually};

/// Long enough for the circuit's open time (20 s), a deferral's jitter and a busy box.
const WITHIN: Duration = Duration::from_secs(150);

async fn finished(api: &Api, id: &str) -> Value {
    let what = format!("task {id} to finish");
    eventually(WITHIN, &what, || async {
        let task = api.get(&format!("/v1/tasks/{id}")).await.body;
        match task["state"].as_str() {
            Some("succeeded" | "failed" | "cancelled") => Ok(task),
            _ => Err(task),
        }
    })
    .await
}

async fn attempts(api: &Api, id: &str) -> Vec<Value> {
    let answer = api.get(&format!("/v1/tasks/{id}/attempts")).await;
    answer.body["items"]
        .as_array()
        .expect("attempt items")
        .clone()
}

#[tokio::test]
async fn local_only_tasks_wait_for_the_open_circuit_without_spending_attempts() {
    let db = common::test_db().await;
    let mut parsed = tasklane::task::types_file::TaskTypesFile::parse(DEMO_TASK_TYPES).unwrap();
    let mock = tasklane::mockllm::demo::start_for(&mut parsed)
        .await
        .unwrap();
    let types = DEMO_TASK_TYPES
        .replace("http://127.0.0.1:11434/v1", &mock.base_url())
        .replace("http://127.0.0.1:11435/v1", &mock.base_url());
    let (_replica, api) = replica(&db, types, Vec::new()).await;
    let admin = api.with_token(&api::token(&db.url, "ops", None, &["admin"]).await);

    // The warm-up's failures open the local circuit.
    let mut local_only = Vec::new();
    for n in 0..4 {
        local_only.push(submit(&api, "openai", &format!("early-{n}"), json!({})).await);
    }
    eventually(WITHIN, "the demo-local circuit to open", || async {
        let circuits = admin.get("/v1/admin/circuits").await.body;
        let open = circuits["items"].as_array().is_some_and(|items| {
            items
                .iter()
                .any(|c| c["route_name"] == "demo-local" && c["state"] == "open")
        });
        match open {
            true => Ok(()),
            false => Err(circuits),
        }
    })
    .await;
    // While it is open: local-only tasks wait, external-allowed ones fall back.
    let mut waiting = Vec::new();
    for n in 0..2 {
        waiting.push(submit(&api, "openai", &format!("late-{n}"), json!({})).await);
    }
    let mut external = Vec::new();
    for n in 0..2 {
        let privacy = json!({"privacy": "external_allowed"});
        external.push(submit(&api, "openai", &format!("out-{n}"), privacy).await);
    }

    for id in local_only.iter().chain(&waiting) {
        let task = finished(&api, id).await;
        assert_eq!(task["state"], "succeeded", "{task}");
        assert_eq!(
            task["provenance"]["model"], "llama3.2",
            "answered locally: {task}"
        );
        let rows = attempts(&api, id).await;
        assert!(rows.len() <= 3, "{id} spent {} attempts", rows.len());
    }
    // The tasks submitted while the circuit was open called nothing until it closed:
    // one attempt each, the success, and their deferrals in their events.
    for id in &waiting {
        let rows = attempts(&api, id).await;
        let outcomes: Vec<&str> = rows.iter().filter_map(|r| r["outcome"].as_str()).collect();
        assert_eq!(outcomes, ["succeeded"], "{rows:?}");
        let events = api.get(&format!("/v1/tasks/{id}/events?limit=100")).await;
        let deferred = events.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "task.waiting_for_retry" && e["data"]["deferred"] == true)
            .count();
        assert!(deferred >= 1, "no deferral among {:?}", events.body);
    }
    for id in &external {
        let task = finished(&api, id).await;
        assert_eq!(task["state"], "succeeded", "{task}");
        let rows = attempts(&api, id).await;
        assert_eq!(rows[0]["outcome"], "fallback", "{rows:?}");
        assert_eq!(rows[0]["error"]["code"], "circuit_open", "{rows:?}");
        let message = rows[0]["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("demo-local"), "names the route: {message}");
    }

    let extract = submit(&api, "extract", "structured", json!({})).await;
    let task = finished(&api, &extract).await;
    assert_eq!(task["state"], "succeeded", "{task}");
    let output = &task["result"]["output"];
    assert!(
        ["positive", "neutral", "negative"].contains(&output["sentiment"].as_str().unwrap_or("")),
        "{task}"
    );
    assert!(output["summary"].is_string(), "{task}");
}
