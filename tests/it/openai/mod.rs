//! The `openai` executor against real HTTP upstreams (the library's OpenAI-compatible
//! mock on loopback): classification of every kind of answer, routing and fallback,
//! TLS, cancellation, submit validation, refused configurations, and structured outputs
//! checked against the type's schema.

mod circuit_wait;
mod classification;
mod cluster;
mod config;
mod routing;
mod structured;
mod tls;

use std::time::Duration;

use serde_json::{json, Value};
use tasklane::mockllm::MockLlm;

use crate::common::api::{self, Api, ALL};
use crate::common::in_process::InProcess;
use crate::common::serve::Options;
use crate::common::{eventually, TestDb};

/// A route of a test type: name, kind, model and base URL.
pub struct R<'a> {
    pub name: &'a str,
    pub kind: &'a str,
    pub model: &'a str,
    pub base_url: &'a str,
}

/// One `[[task_type]]` of executor `openai` with `extra` TOML lines and `routes`; the
/// key (when given) from `key_file`.
pub fn openai_type(name: &str, extra: &str, routes: &[R<'_>], key_file: Option<&str>) -> String {
    let mut toml = format!(
        "[[task_type]]\nname = \"{name}\"\nexecutor = \"openai\"\nbackoff_base_ms = 50\nbackoff_cap_seconds = 1\n{extra}\n"
    );
    for r in routes {
        toml.push_str(&format!(
            "[[task_type.routes]]\nname = \"{}\"\nroute = \"{}\"\nprovider = \"mock\"\nmodel = \"{}\"\nbase_url = \"{}\"\n",
            r.name, r.kind, r.model, r.base_url
        ));
        if let Some(file) = key_file {
            toml.push_str(&format!("api_key_file = \"{file}\"\n"));
        }
    }
    toml
}

/// A one-route local type `name` calling `model` on `mock`.
pub fn local_type(name: &str, extra: &str, mock: &MockLlm, model: &str) -> String {
    let base = mock.base_url();
    openai_type(
        name,
        extra,
        &[R {
            name: &format!("{name}-local"),
            kind: "local",
            model,
            base_url: &base,
        }],
        None,
    )
}

/// An in-process replica serving `types` (TOML), and an API client of app `ai`.
pub async fn replica(
    db: &TestDb,
    types: String,
    env: Vec<(&'static str, String)>,
) -> (InProcess, Api) {
    let types: &'static str = Box::leak(types.into_boxed_str());
    let serve = InProcess::start(
        &db.url,
        Options {
            task_types: Some(types),
            env,
            ..Default::default()
        },
    )
    .await;
    let api = serve.api(&api::token(&db.url, "ai", None, ALL).await);
    (serve, api)
}

/// A chat input.
pub fn chat() -> Value {
    json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 20})
}

/// Submits a chat task of `task_type` with `extra` body fields; its id.
pub async fn submit(api: &Api, task_type: &str, key: &str, extra: Value) -> String {
    let mut body = json!({"input": chat()});
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        body[k] = v;
    }
    let answer = api.submit(task_type, "s", key, body).await;
    assert_eq!(answer.status, 202, "submit {task_type}: {:?}", answer.body);
    answer.body["id"].as_str().expect("an id").to_owned()
}

/// Waits for the task to be terminal; its view.
pub async fn terminal(api: &Api, id: &str) -> Value {
    api.wait_for(id, |t| {
        matches!(
            t["state"].as_str(),
            Some("succeeded" | "failed" | "cancelled")
        )
    })
    .await
}

/// The types of the task's events, in order.
pub async fn events(api: &Api, id: &str) -> Vec<String> {
    let answer = api.get(&format!("/v1/tasks/{id}/events?limit=100")).await;
    answer.body["items"]
        .as_array()
        .expect("event items")
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// Waits until `mock` has had `n` calls for `model`.
pub async fn until_calls(mock: &MockLlm, model: &str, n: u64) {
    let what = format!("{n} calls to {model}");
    eventually(Duration::from_secs(20), &what, || async {
        let calls = mock.calls(model);
        if calls >= n {
            Ok(())
        } else {
            Err(calls)
        }
    })
    .await
}

/// `(state, error.code)` of a task view.
pub fn state_code(task: &Value) -> (String, Option<String>) {
    (
        task["state"].as_str().unwrap_or("").to_owned(),
        task["error"]["code"].as_str().map(str::to_owned),
    )
}
